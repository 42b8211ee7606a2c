"""Interrupted commands stop what they started (issue 15 item 8): `predigest once` stopped by SIGTERM, with its
worker busy or frozen, or killed outright, leaves no process behind; a worker removes the temp files an
interrupted briefing write left."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from sinks.state import StateStore
from streams.settings import Settings
from streams.worker_process import STOP_CHILD_SECONDS
from tests.support import running_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROJECT = Path(__file__).resolve().parents[2]
END = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))


def _alive(pid: int) -> bool:
    try:
        return " Z " not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


def _descendants(pid: int) -> dict[int, str]:
    """pid → command line of every process below `pid`."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = {}, [pid]
    while frontier:
        below = [p for p, parent in parents.items() if parent in frontier]
        for p in below:
            try:
                found[p] = (Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")).decode(
                    errors="replace"
                )
            except OSError:
                continue
        frontier = below
    return found


@contextmanager
def _once(kafka_bootstrap: str, out: Path) -> Iterator[tuple[subprocess.Popen[str], dict[int, str]]]:
    """`predigest once` on the example root, run until its worker and the worker's parse processes are up."""
    predigest = Path(sys.executable).parent / "predigest"
    args = [
        "once",
        "--root",
        "examples/root",
        "--axis",
        "inference",
        "--end",
        END.isoformat(),
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        [str(predigest), *args, "--timeout", "120"],
        cwd=PROJECT,
        env={"PREDIGEST_KAFKA__BOOTSTRAP": kafka_bootstrap, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started: dict[int, str] = {}
    try:

        def worker_busy() -> bool:
            started.update(_descendants(proc.pid))
            workers = [p for p, cmd in started.items() if " worker" in cmd and _alive(p)]
            return any(_descendants(w) for w in workers)  # its parse processes run: the worker is up

        wait_for(
            lambda: proc.poll() is not None or worker_busy(), 120, "once's worker and its parse processes"
        )
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        yield proc, started
    finally:
        for pid in [proc.pid, *started]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.communicate()  # waits, and closes its output pipe


def _none_left(started: dict[int, str], within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)
    left = {p: cmd for p, cmd in started.items() if _alive(p)}
    assert left == {}, f"still running {within:.0f}s later: {left}"


def test_once_stopped_by_sigterm_stops_its_worker_and_exits_within_seconds(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    with _once(kafka_bootstrap, tmp_path / "out") as (proc, started):
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - stopped_at
        output = proc.stdout.read() if proc.stdout else ""
        _none_left(started, 10)
    assert code == 128 + signal.SIGTERM, output[-3000:]
    assert took < STOP_CHILD_SECONDS + 5, f"once took {took:.1f}s to stop"
    assert "interrupted by SIGTERM" in output


def test_once_stopped_by_sigterm_kills_a_worker_that_does_not_answer(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # A worker whose loop is stuck in a long computation does not act on SIGTERM; SIGSTOP stands in for it.
    with _once(kafka_bootstrap, tmp_path / "out") as (proc, started):
        worker = next(p for p, cmd in started.items() if " worker" in cmd)
        os.kill(worker, signal.SIGSTOP)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - stopped_at
        _none_left(started, 10)
    assert code == 128 + signal.SIGTERM
    assert took < STOP_CHILD_SECONDS + 5


def test_once_gives_its_worker_the_time_of_its_own_clean_stop(kafka_bootstrap: str, tmp_path: Path) -> None:
    # A worker whose stop takes 8 s (batches in hand, a checkpoint), longer than the 5 s it once had: frozen that long.
    with _once(kafka_bootstrap, tmp_path / "out") as (proc, started):
        worker = next(p for p, cmd in started.items() if " worker" in cmd)
        os.kill(worker, signal.SIGSTOP)
        proc.send_signal(signal.SIGTERM)
        time.sleep(8)
        assert _alive(worker), "the worker was killed before its own stop could run"
        os.kill(worker, signal.SIGCONT)  # its SIGTERM waited meanwhile
        code = proc.wait(timeout=60)
        output = proc.stdout.read() if proc.stdout else ""
        _none_left(started, 10)
    assert code == 128 + signal.SIGTERM, output[-3000:]
    assert f"stopping the worker (up to {STOP_CHILD_SECONDS:.0f} s; Ctrl-C again to kill it now)" in output
    kept = re.search(r"the worker's log and state are kept in (\S+)", output)
    assert kept, output[-3000:]
    worker_log = (Path(kept[1]) / "worker.log").read_text(errors="replace")
    # Its stop ran to its end (its state, if opened by then, checkpointed: no WAL left), not cut by a SIGKILL.
    assert "Signal received: 15" in worker_log and "Closing event loop" in worker_log, worker_log[-3000:]
    assert not list(Path(kept[1]).glob("*.wal"))


def test_a_second_signal_kills_onces_worker_at_once(kafka_bootstrap: str, tmp_path: Path) -> None:
    with _once(kafka_bootstrap, tmp_path / "out") as (proc, started):
        worker = next(p for p, cmd in started.items() if " worker" in cmd)
        os.kill(worker, signal.SIGSTOP)  # it would take the whole wait
        proc.send_signal(signal.SIGTERM)
        time.sleep(3)
        again_at = time.monotonic()
        proc.send_signal(signal.SIGINT)  # the operator's second Ctrl-C
        code = proc.wait(timeout=30)
        took = time.monotonic() - again_at
        output = proc.stdout.read() if proc.stdout else ""
        _none_left(started, 5)
    # Without the second signal's exit it would take the 20 s to SIGKILL; under CI's load a clean exit took > 3 s.
    assert code == 128 + signal.SIGINT and took < 10, (took, output[-3000:])
    assert "Ctrl-C again to kill it now" in output and "SIGINT again: exiting now" in output


def test_once_killed_outright_takes_its_worker_with_it(kafka_bootstrap: str, tmp_path: Path) -> None:
    # SIGKILL (the OOM killer, `timeout -s KILL`) gives once no chance to stop anything: the worker asked the
    # kernel to kill it when its parent dies, and its parse processes follow their worker.
    with _once(kafka_bootstrap, tmp_path / "out") as (proc, started):
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        _none_left(started, 10)


def test_a_worker_removes_the_temp_files_an_interrupted_write_left(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    folder = s.out_dir / "inference"
    folder.mkdir(parents=True)
    left = folder / ".2026-09-27-inference-e1prep.json.x7_k2m9q"  # as a worker SIGKILLed mid-write leaves it
    left.write_bytes(b"")
    old = time.time() - 3600
    os.utime(left, (old, old))
    with running_worker(s, tmp_path):
        # At start: once the worker opens its state (its partitions assigned), before any briefing is written.
        wait_for(lambda: not left.exists(), 30, "the stale temp file to be removed")
    assert (
        "removed 1 temp file(s) left by an interrupted briefing write"
        in (tmp_path / "worker.log").read_text()
    )


BUSY_LOOP = """
import asyncio, signal, sys
from streams.stopping import hard_exit_after_signal

async def main():
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: print("the loop would stop now", flush=True))
    hard_exit_after_signal(1.0, lambda: "briefing an axis")  # as the worker does, Faust's handlers installed
    print("ready", flush=True)
    while True:  # a briefing that keeps the loop busy: its SIGTERM callback never runs
        sum(range(10_000))

asyncio.run(main())
"""


@pytest.mark.timeout(60)
def test_a_process_whose_busy_loop_never_acts_on_sigterm_exits_soon_after_it() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", BUSY_LOOP],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    finally:
        proc.kill()
        _, err = proc.communicate()  # its pipes closed
    assert code == 128 + signal.SIGTERM and time.monotonic() - started < 5
    # The line says what the stop was doing when it ran out of time.
    assert "still running 1s after SIGTERM (briefing an axis): exiting now" in err


def _opened(pid: int, path: Path) -> bool:
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if fd.readlink() == path:
                return True
    return False


def _read_so_far(pid: int) -> int:
    """The bytes `pid` has read (`rchar`: page cache included), 0 once it has ended."""
    try:
        io = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return 0
    return next(int(line.split()[1]) for line in io.splitlines() if line.startswith("rchar:"))


def test_a_sigterm_during_a_duckdb_query_exits_as_the_signal_in_one_line(tmp_path: Path) -> None:
    """SIGTERM while `predigest rebuild` checks the old state, a DuckDB query in the main thread: DuckDB turns the
    signal's exception into "Query interrupted"; the command exits as the signal, where it printed a traceback and
    exited 1. (A Ctrl-C there is asyncio.run's: it cancels the command once the query has ended.)"""
    sig = signal.SIGTERM
    state = tmp_path / "worker.duckdb"
    StateStore(state).close()
    with duckdb.connect(str(state)) as db:  # a large state: its check at open reads every block (~1 s)
        db.execute("CREATE TABLE filler AS SELECT range AS i, hash(range) AS s FROM range(16000000)")
    env = {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_STATE_DIR": str(tmp_path),
        "PREDIGEST_KAFKA__BOOTSTRAP": "127.0.0.1:9",  # never reached: the signal comes first
        "PREDIGEST_DUCKDB__THREADS": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "rebuild"],
        cwd=PROJECT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: proc.poll() is not None or _opened(proc.pid, state), 60, "the state opened", 0.005)
        # Into the check's read of the filler (~130 MiB): a fixed 0.1 s was past its end on a fast, idle machine.
        at_open = _read_so_far(proc.pid)
        wait_for(
            lambda: proc.poll() is not None or _read_so_far(proc.pid) - at_open >= 8 << 20,
            60,
            "the check reading",
            0.002,
        )
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err[-3000:]
    assert err.strip().splitlines() == [err.strip().splitlines()[0]]
    assert err.rstrip().endswith(f"interrupted by {signal.Signals(sig).name}; what it started is stopped")
    # Stopped before setting the state aside (its claim's lock file stays, as it always does).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker.duckdb", "worker.duckdb.lock"]
