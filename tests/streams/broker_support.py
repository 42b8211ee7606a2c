"""Stand-in local brokers: processes `kafka.sh` takes for the broker of a data dir, as it takes the real one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def stand_in_broker(data: Path, code: str = "") -> Iterator[subprocess.Popen[str]]:
    """A process that runs `code` (its signal handlers), prints `up` and sleeps, written as the broker of `data`
    in its `kafka.pid`; its command line ends as the real broker's does (`kafka.Kafka <data>/server.properties`),
    which is what `kafka.sh` checks before it trusts or signals that pid. Killed after."""
    data.mkdir(parents=True, exist_ok=True)
    script = f"import signal, sys, time\n{code}\nprint('up', flush=True)\ntime.sleep(60)"
    argv = [sys.executable, "-c", script, "kafka.Kafka", f"{data.resolve()}/server.properties"]
    broker = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None and broker.stdout.readline().strip() == "up"
        (data / "kafka.pid").write_text(f"{broker.pid}\n")
        yield broker
    finally:
        broker.kill()
        broker.communicate()
