"""The watcher's first start over n new notes, two code trees alternated (issue 14: watch44's regression hunt).

    python -m bench.watch44.first_start --n 20000 --pairs 3 --a /tmp/watch44/old --b . [--work DIR]

Each run is a `predigest watch` of tree A or B (its own PYTHONPATH and cwd, this venv's interpreter) on the same
root (bench.watcher_scale.build_root, built once), with a fresh ledger and topics, on one broker of this tree's;
the watcher's utime+stime when it logs "startup scan published", and the broker's over the same span. Odd pairs
run A first, even pairs B first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import procs
from bench.broker import Broker
from bench.pipeline_run import bench_settings
from bench.watcher_scale import _STARTUP, build_root
from streams.worker_process import dump_settings, stop_process


def _cpu(pid: int) -> float:
    """utime + stime (and waited-for children's) of a process, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / procs.HZ


def one_run(
    tree: Path, broker: Broker, root: Path, work: Path, name: str, prefix: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One first start of tree's watcher; its CPU and the broker's, the wall seconds it logged, the loads."""
    run = work / name
    run.mkdir(parents=True)
    settings = bench_settings(broker.bootstrap, root, run, "w44", rescan_seconds=3.0)
    cfg = dump_settings(settings, run / "settings.json")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    profile = ("-m", "cProfile", "-o", str(run / "watch.prof")) if os.environ.get("WATCH44_CPROFILE") else ()
    argv = [*prefix, sys.executable, *profile, "-m", "streams.cli", "--settings-json", str(cfg), "watch"]
    load = procs.loadavg()
    kafka = _cpu(broker.pids[0])
    with (run / "watch.log").open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tree, env=env)
    try:
        procs.wait_log(run / "watch.log", "startup scan published", proc, 1800)
        cpu, kafka = _cpu(proc.pid), _cpu(broker.pids[0]) - kafka
    finally:
        # The traced watcher itself, so that strace writes its counts.
        for child in procs.child_pids(proc.pid) if prefix else ():
            os.kill(child, signal.SIGTERM)
        stop_process(proc, timeout=20)
    m = _STARTUP.search((run / "watch.log").read_text(errors="replace"))
    assert m is not None
    return {
        "tree": str(tree),
        "published": int(m.group(1)),
        "wall_s": float(m.group(2)),
        "watcher_cpu_s": round(cpu, 2),
        "broker_cpu_s": round(kafka, 2),
        "load": [load, procs.loadavg()],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--a", type=Path, required=True)
    p.add_argument("--b", type=Path, required=True)
    p.add_argument("--work", type=Path, default=None)
    p.add_argument(
        "--strace", action="store_true", help="each watcher under `strace -f -c` (counts, not CPU)"
    )
    a = p.parse_args()
    work = a.work or Path(os.environ.get("TMPDIR", "/tmp")) / f"watch44-first-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    root = work / f"root-{a.n}"
    if not root.exists():
        build_root(root, a.n)
    broker = Broker.start(work / f"kafka-{time.time_ns()}")
    try:
        for pair in range(1, a.pairs + 1):
            order = [("A", a.a), ("B", a.b)] if pair % 2 else [("B", a.b), ("A", a.a)]
            for label, tree in order:
                name = f"p{pair}-{label}-{time.time_ns()}"
                prefix = ("strace", "-f", "-c", "-o", str(work / f"{name}.strace")) if a.strace else ()
                out = one_run(tree.resolve(), broker, root, work, name, prefix)
                print(json.dumps({"pair": pair, "variant": label, **out}), flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
