"""The state's close at a clean stop: its WAL written into the file, once; a checkpoint the disk refuses says so,
and the rows it could not write wait in the WAL for the next open."""

from __future__ import annotations

import base64
import random
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from sinks.duck import Limits
from sinks.errors import StateBusyError, StateLocationError
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from tests.sinks.conftest import HeldClose
from tests.state_support import a_long_read, document_record, parsed, store_large_notes

PROJECT = Path(__file__).resolve().parents[2]


def _store(state: StateStore, count: int) -> None:
    """`count` notes of ~4 KB each, committed: in the WAL, no checkpoint yet (DuckDB's comes past 16 MB)."""
    rng, note = random.Random(3), parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache.")
    batch = []
    for offset in range(count):
        text = base64.b64encode(rng.randbytes(3_000)).decode()
        doc = note.model_copy(update={"path": f"inbox/jay/n{offset}.md", "text": text, "sections": ()})
        batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    assert all(state.apply_batch(batch))


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def test_a_checkpointed_close_leaves_no_wal_and_a_second_close_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    _store(state, 200)
    reader = state.reader()  # a read's cursor still open at the stop (a /status in flight)
    assert _wal(path).stat().st_size > 0
    state.close(checkpoint=True)
    assert not _wal(path).exists()
    state.close(checkpoint=True)  # harmless: already closed
    state.close()
    reader.close()
    again = StateStore(path)
    try:
        assert again.axis_summary("inference")["documents"] == 200
    finally:
        again.close()


def test_a_checkpoint_the_disk_refuses_raises_after_the_close_and_the_wal_keeps_the_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "worker.duckdb"
    state = StateStore(path)
    _store(state, 200)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process
    # The files can grow no more: a full disk for DuckDB (EFBIG rather than ENOSPC).
    resource.setrlimit(resource.RLIMIT_FSIZE, (min(path.stat().st_size, _wal(path).stat().st_size), limit[1]))
    try:
        with pytest.raises(
            StateLocationError, match=r"cannot checkpoint the state file .*Free space on its disk"
        ):
            state.close(checkpoint=True)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, previous)
    state.close(checkpoint=True)  # closed already: nothing raised again
    assert _wal(path).stat().st_size > 0
    again = StateStore(path)
    try:
        assert again.axis_summary("inference")["documents"] == 200  # replayed from the WAL
    finally:
        again.close()


@pytest.mark.timeout(300)  # ~160 MB of notes through the real write path, and its WAL replayed at each reopen
def test_a_checkpoint_at_the_stop_past_the_memory_limit_gets_more_memory_as_a_writes_does(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Notes written while the limit was raised, the limit back at 64 MiB for the stop (a raise is halved back after
    # 100 writes): the stop's checkpoint pins more than that and is reopened with more, up to the ceiling.
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    state._db.execute("SET checkpoint_threshold = '1GB'")  # every note stays in the WAL until the stop
    state._db.execute("SET memory_limit = '1GB'")
    stored = store_large_notes(state)
    state._db.execute("SET memory_limit = '64MiB'")
    state.close(checkpoint=True)
    assert "the state's checkpoint ran out of memory" in caplog.text, (
        "the stop's checkpoint needed the reopen"
    )
    assert not _wal(path).exists()
    again = StateStore(path, Limits(memory_mib=1024, threads=1))
    try:
        assert again.document_count() == stored
    finally:
        again.close()


def test_a_stop_whose_reopen_closes_slower_than_its_interrupts_with_no_read_checkpoints_and_raises_nothing(
    tmp_path: Path, held_close: HeldClose, caplog: pytest.LogCaptureFixture
) -> None:
    """A stop's checkpoint out of memory, the invalidated connection's close slower than 0.2 s of interrupts with no
    read on it (1 of 2 runs at load 13): the clean stop raised StateBusyError, its rows left in the WAL."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    _store(state, 20)
    reader = state.reader()  # a /status's cursor, open and reading nothing
    # As the stop's checkpoint leaves it when it runs out of memory: to be closed and reopened with more.
    state._reopening = ("could not allocate", duckdb.OutOfMemoryException("could not allocate"))
    state.close(checkpoint=True)
    assert held_close.said.is_set(), "the close was held past its interrupts"
    assert f"the state file {path} has been closing for over 1 s, no read refusing it" in caplog.text
    assert (
        "the state's checkpoint ran out of memory (could not allocate); reopened with 128 MiB" in caplog.text
    )
    assert not _wal(path).exists()
    reader.close()
    again = StateStore(path)
    try:
        assert again.axis_summary("inference")["documents"] == 20
    finally:
        again.close()


def test_a_writes_reopen_whose_close_is_slow_with_no_read_fails_the_write_after_1_s_and_the_retry_lands(
    tmp_path: Path, held_close: HeldClose, caplog: pytest.LogCaptureFixture
) -> None:
    """A write on the event loop must reopen the invalidated state, whose close is slow with its own work and no read
    on it: the write, and the worker's event loop with it, waited for that close however long. It now fails (a
    StateBusyError, which the worker retries) and the retry, once the close ended, reopens and stores every note."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    # As a write's checkpoint leaves it when it runs out of memory: to be closed and reopened with more.
    state._reopening = ("could not allocate", duckdb.OutOfMemoryException("could not allocate"))
    try:
        with pytest.raises(StateBusyError, match=r"its close has not ended .* the write is retried"):
            _store(state, 10)
        assert not held_close.said.is_set(), "the write waited for the close to end"
        held_close.said.set()  # DuckDB's own close ends
        _store(state, 10)  # the worker's retry: every note new
        assert state.axis_summary("inference")["documents"] == 10
        assert (
            "the state's checkpoint ran out of memory (could not allocate); reopened with 128 MiB"
            in caplog.text
        )
    finally:
        state.close()


def test_a_write_after_the_close_raises_at_once_and_never_reopens_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Closed with a reopen pending (a checkpoint out of memory a read held up): the write must not reopen it.
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    _store(state, 1)
    state.close()
    state._reopening = ("could not allocate", duckdb.OutOfMemoryException("could not allocate"))
    with pytest.raises(duckdb.ConnectionException, match=r"the state file .*worker\.duckdb is closed"):
        _store(state, 2)
    assert "reopened" not in caplog.text
    again = StateStore(path)  # the file is free: nothing holds it open again
    try:
        assert again.axis_summary("inference")["documents"] == 1
    finally:
        again.close()


@pytest.mark.timeout(300)
def test_a_stop_as_a_read_on_the_state_begins_interrupts_it_and_does_not_wait_for_it(tmp_path: Path) -> None:
    """A stop as a briefing's read (or /status's) began: DuckDB's close waited for the read (minutes at 100k), the
    interrupt sent before it started lost (1 to 4 in 160 at 0-2 ms, load 5, before)."""
    slowest = 0.0
    for i in range(300):
        state = StateStore(tmp_path / f"worker-{i}.duckdb")
        started, ended = threading.Event(), threading.Event()
        reader = state.reader()._db  # the cursor a read of /status or the browser runs on
        threading.Thread(target=a_long_read, args=(reader, started, ended), daemon=True).start()
        started.wait()
        time.sleep(i % 30 / 10_000)  # the read's start takes a moment: the stop comes at each point of it
        began = time.monotonic()
        state.close()
        slowest = max(slowest, time.monotonic() - began)
        assert ended.wait(30), "the read ran on after the state's close"
    assert slowest < 10, slowest  # the read alone takes minutes


# A process whose state's close outlasts its interrupts, then exits: a read the state did not hand out (so never
# interrupted) runs in a thread the exit waits for, as an executor's; the close then writes the WAL the state holds.
# The read sleeps: a sum of 40 M hashes took 0.3 s of CPU here, ended before the close's 0.2 s of interrupts on a
# machine with more cores, and the close then said nothing of a read.
_CLOSED_AS_IT_EXITS = """
import sys, threading, time
from pathlib import Path
from sinks.state import StateStore

state = StateStore(Path(sys.argv[1]))
state._db.execute("SET checkpoint_threshold = '1TB'")
state._db.execute("CREATE TABLE filler (i BIGINT, s VARCHAR)")
for _ in range(300):
    state._db.execute("INSERT INTO filler SELECT range, repeat('y', 200) FROM range(1000)")
cursor, started = state._db.cursor(), threading.Event()

def read():
    started.set()
    cursor.execute("SELECT count(sleep_ms(10)) FROM range(200)").fetchall()  # 2 s asleep, on any machine

threading.Thread(target=read).start()
started.wait()
time.sleep(0.05)  # the read under way: the close is refused until it ends
state.close()
"""


@pytest.mark.timeout(180)
def test_a_process_exiting_while_its_states_close_ends_exits_cleanly(tmp_path: Path) -> None:
    """The close's thread was a daemon: still in DuckDB as the interpreter finalized, it aborted the process (SIGABRT,
    "terminate called ... FATAL: exception not rethrown") after a stop that had gone well (5 of 5 runs failed before)."""
    for run in range(6):
        done = subprocess.run(
            [sys.executable, "-c", _CLOSED_AS_IT_EXITS, str(tmp_path / f"worker-{run}.duckdb")],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        # What the test sets up: the close gave up interrupting before the read ended.
        assert "closes once what holds it ends" in done.stderr, done.stderr
        assert done.returncode == 0 and "FATAL" not in done.stderr, (run, done.returncode, done.stderr[-600:])
        assert not _wal(tmp_path / f"worker-{run}.duckdb").exists(), "the close was cut short by the exit"
