"""The watcher cannot hang silently: a stalled loop fails /healthz and freezes its heartbeat gauge, and SIGTERM
stops it within seconds, even while it is stuck in a system call; a Ctrl-C during its start ends it in one line."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from aiokafka import AIOKafkaProducer

from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import kafka_io, root_files, watcher_web
from streams.settings import KafkaSettings, Settings
from streams.watcher import Watcher, publish_root
from streams.worker_process import dump_settings, free_port, spawn_cli
from tests.ledger_support import invalidated
from tests.streams.fault_support import metric
from tests.streams.watcher_support import FakeProducer, write_old
from tests.support import async_wait_for, wait_for

PROJECT = Path(__file__).resolve().parents[2]
HEARTBEAT = "predigest_watcher_loop_heartbeat_timestamp_seconds"


def health(port: int) -> tuple[int, dict[str, Any]]:
    answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2.0)
    return answer.status_code, answer.json()


class WatcherThread:
    """`Watcher.run` on an event loop of its own thread, so that this thread can look on while that loop is stuck."""

    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher
        self._started = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._started.set()
        await self._watcher.run(self._stop)

    def __enter__(self) -> WatcherThread:
        self._thread.start()
        self._started.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        assert not self._thread.is_alive()


@pytest.mark.timeout(60)
def test_a_stalled_loop_fails_health_and_freezes_the_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    (root / "inbox/jay").mkdir(parents=True)
    s = Settings(
        root=root,
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        quiet_seconds=0.1,
        watcher_stall_seconds=1.0,
    )
    producer, ledger, metrics = FakeProducer(), Ledger(s.ledger_file), WatcherMetrics()
    watcher = Watcher(s, producer, ledger, metrics)
    port = free_port()
    server = watcher_web.serve("127.0.0.1", port, metrics, {"/healthz": watcher.health})
    assert server is not None
    release = threading.Event()
    real_read = root_files.read_file

    def stuck(*args: Any) -> root_files.FileOutcome:
        release.wait(30)  # a read the kernel does not answer (a hung network file system)
        return real_read(*args)

    try:
        with WatcherThread(watcher):
            wait_for(lambda: health(port)[0] == 200, 10, "a healthy watcher")
            assert time.time() - (metric(f"http://127.0.0.1:{port}/metrics", HEARTBEAT) or 0) < 1.0
            monkeypatch.setattr(root_files, "read_file", stuck)
            (root / "inbox/jay/2026-09-27-note.md").write_text("# note\n", encoding="utf-8")
            wait_for(lambda: health(port)[0] == 503, 10, "/healthz to say the loop stalled")
            status, body = health(port)
            assert status == 503 and body["status"] == "stalled" and body["heartbeat_age_seconds"] > 1.0
            frozen = metric(f"http://127.0.0.1:{port}/metrics", HEARTBEAT)
            time.sleep(0.3)
            assert metric(f"http://127.0.0.1:{port}/metrics", HEARTBEAT) == frozen
            release.set()  # the read returns: the loop goes on, and says so
            wait_for(lambda: health(port)[0] == 200, 10, "a healthy watcher again")
            wait_for(lambda: len(producer.sent) == 1, 10, "the note to be published")
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        ledger.close()


STUCK_IN_OPEN = """
import asyncio, logging, sys
from streams.stopping import install_stop

async def main():
    install_stop(asyncio.Event(), grace=1.0)
    print("ready", flush=True)
    open(sys.argv[1], "rb")  # a FIFO with no writer: blocks the loop for good, as a swapped-in FIFO did

logging.basicConfig(level=logging.INFO)
asyncio.run(main())
"""


def test_sigterm_stops_a_process_stuck_in_a_blocking_open_within_seconds(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with subprocess.Popen(
        [sys.executable, "-c", STUCK_IN_OPEN, str(fifo)],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:  # closes its pipes on the way out
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(0.3)  # in open() by now
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=10)
        finally:
            proc.kill()
        stderr = proc.stderr.read() if proc.stderr else ""
    assert time.monotonic() - started < 5
    assert code == 128 + signal.SIGTERM
    assert "still running 1s after SIGTERM: exiting now" in stderr


@pytest.mark.integration
@pytest.mark.timeout(120)
async def test_the_real_watcher_is_healthy_and_stops_on_sigterm_within_seconds(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    proc = spawn_cli(s, tmp_path, "watcher", "watch")
    try:
        port = s.watcher_metrics_port
        wait_for(lambda: _answers(port), 60, "the watcher's /healthz")
        assert health(port) == (200, {"status": "ok", "heartbeat_age_seconds": pytest.approx(0, abs=1)})
        # Ready once its start-up scan is done, Kafka answering: what the compose healthcheck asks.
        ready = _readyz(port)
        assert (ready.status_code, ready.json()["not_ready"]) == (200, [])
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert time.monotonic() - started < 5
    finally:
        proc.kill()


def _readyz(port: int) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2.0)


def _answers(port: int) -> bool:
    try:
        return health(port)[0] == 200
    except httpx.HTTPError:
        return False


# `predigest watch` itself, its stop held up where it closes its ledger (a disk that hangs a write), as an
# operator pressing Ctrl-C meets it: the loop stopped, the process not yet gone.
STUCK_IN_ITS_STOP = """
import sys, time
from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger
from streams import cli

def stuck_close(self, *, write=True):
    print("closing the ledger", flush=True)
    time.sleep(60)

Ledger.close = stuck_close
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_second_ctrl_c_exits_a_watcher_still_stopping_at_once(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    cfg = dump_settings(s, tmp_path / "watcher-settings.json")
    argv = [sys.executable, "-c", STUCK_IN_ITS_STOP, "--settings-json", str(cfg), "watch"]
    with subprocess.Popen(
        argv, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        try:
            wait_for(lambda: _answers(s.watcher_metrics_port), 60, "the watcher's /healthz")
            proc.send_signal(signal.SIGINT)  # the first Ctrl-C: the watcher stops as always …
            assert proc.stdout is not None
            lines = [proc.stdout.readline()]
            while lines[-1] and "closing the ledger" not in lines[-1]:  # … up to its ledger's close
                lines.append(proc.stdout.readline())
            assert lines[-1], "".join(lines)[-3000:]
            again_at = time.monotonic()
            proc.send_signal(signal.SIGINT)  # the second: no more waiting
            code = proc.wait(timeout=15)
            took = time.monotonic() - again_at
        finally:
            proc.kill()
        output = "".join(lines) + proc.stdout.read()
    # The stuck close would hold it 60 s; the margin is for a loaded box, not for a slower exit.
    assert code == 128 + signal.SIGINT and took < 10, (took, output[-3000:])
    # The line `once` and `run` print at a second signal, and no other error.
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and errors[0].endswith(
        "SIGINT again: exiting now (unacknowledged files are sent again at the next start)"
    ), output[-3000:]


# `predigest watch` held where it ensures its topics, before it sets its own handler: a Ctrl-C there met Python's
# default (a KeyboardInterrupt traceback).
HELD_IN_ITS_START = """
import asyncio, sys
from streams import cli, kafka_io

ensure_topics = kafka_io.ensure_topics

async def held(settings):
    print("ensuring the topics", flush=True)
    await asyncio.sleep(60)
    await ensure_topics(settings)

kafka_io.ensure_topics = held
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_ctrl_c_during_the_watchers_start_exits_with_one_line(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    cfg = dump_settings(make_settings(), tmp_path / "watcher-settings.json")
    argv = [sys.executable, "-c", HELD_IN_ITS_START, "--settings-json", str(cfg), "watch"]
    with subprocess.Popen(
        argv, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline()]
            while lines[-1] and "ensuring the topics" not in lines[-1]:
                lines.append(proc.stdout.readline())
            assert lines[-1], "".join(lines)[-3000:]
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=15)
        finally:
            proc.kill()
        output = "".join(lines) + proc.stdout.read()
    assert code == 128 + signal.SIGINT and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and errors[0].endswith("interrupted by SIGINT; what it started is stopped"), (
        output
    )


async def test_a_stop_while_the_ledger_is_refused_ends_in_its_error_with_the_producer_closed(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    # Before: the ledger's close raised before the producer's stop, which never ran (asyncio's "Unclosed
    # AIOKafkaProducer" at exit; `predigest run` skipped its worker's stop the same way).
    s = make_settings()
    await kafka_io.ensure_topics(s)
    (s.root / "inbox/jay").mkdir(parents=True, exist_ok=True)
    Ledger(s.ledger_file).close()
    other = duckdb.connect(str(s.ledger_file))
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")  # every write refused
    (s.root / "inbox/jay/2026-09-27-1000-a.md").write_text("# a\n", encoding="utf-8")
    stop = asyncio.Event()
    task = asyncio.create_task(publish_root(s, follow=True, stop=stop))
    await async_wait_for(lambda: "cannot write" in caplog.text or task.done(), 30, "a refused flush")
    stop.set()
    with pytest.raises(LedgerWriteError, match="cannot write 1 acknowledgement") as refused:
        await task
    # One try at the stop, which says what follows: no flush comes after it (before: "kept for the next flush",
    # after a first try in the watcher's loop).
    assert "not written at this stop: the next start" in str(refused.value)
    assert not isinstance(refused.value.__context__, LedgerWriteError)
    other.close()
    left_open = [o for o in gc.get_objects() if isinstance(o, AIOKafkaProducer) and not o._closed]
    assert left_open == []


async def test_a_one_shot_scan_whose_ledger_is_refused_tries_once_and_says_the_next_start_sends_them(
    make_settings: Callable[..., Settings],
) -> None:
    # Before: the scan's flush while a file waited to be quiet was refused, then the close tried again.
    s = make_settings(quiet_seconds=3.0)
    await kafka_io.ensure_topics(s)
    (s.root / "inbox/jay").mkdir(parents=True, exist_ok=True)
    Ledger(s.ledger_file).close()
    with duckdb.connect(str(s.ledger_file)) as other:
        other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")  # every write refused
    write_old(s.root / "inbox/jay/2026-09-27-1000-a.md", "# a\n")  # sent at once, acknowledged
    (s.root / "inbox/jay/2026-09-27-1001-b.md").write_text("# b\n", encoding="utf-8")  # quiet in 3 s
    with pytest.raises(LedgerWriteError, match="cannot write 1 acknowledgement") as refused:
        await publish_root(s, follow=False, stop=asyncio.Event())
    assert "not written at this stop: the next start" in str(refused.value)
    chain: list[BaseException] = []
    at: BaseException | None = refused.value
    while at is not None:
        chain.append(at)
        at = at.__cause__ or at.__context__
    assert len([e for e in chain if isinstance(e, duckdb.Error)]) == 1, chain


async def test_a_second_watcher_started_while_the_first_s_ledger_waits_to_reopen_ends_in_one_line(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The first's connection closed by a refusal that invalidated DuckDB's database, until its next write (1-60 s).
    # Before: DuckDB's lock went with it, and a second watcher started and sent the same files; refused by that lock
    # (its first write), asyncio added "Unclosed AIOKafkaProducer": its producer started before the ledger.
    s = make_settings()
    await kafka_io.ensure_topics(s)
    held = invalidated(s.ledger_file, time.monotonic, [("inbox/tom/x.md", 1, 1.0, "x")])
    second = spawn_cli(s, tmp_path, "second", "watch")
    try:
        assert second.wait(timeout=20) == 2
    finally:
        second.kill()
        held.close()
    output = (tmp_path / "second.log").read_text(encoding="utf-8")
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "Traceback" not in output, output
    assert f"lock file {s.ledger_file}.lock is held by another process (PID {os.getpid()})" in errors[0]
