"""The state's reopen after a checkpoint out of memory: a read that holds it up, a disk or a file that fails it."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from sinks import state as state_module
from sinks.duck import Limits
from sinks.errors import StateBusyError, StateLocationError
from sinks.file_claim import lock_path
from sinks.metrics import Metrics
from sinks.state import StateStore
from tests.state_support import (
    ENDLESS_READ,
    duckdb_limits,
    parsed,
    put_document,
    store_large_notes,
    with_keys,
)


class _AtReopen(logging.Handler):
    """Runs `act` when the state reopens after a checkpoint out of memory (its warning, just before it opens the
    file again): what the test breaks for real then."""

    def __init__(self, act: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.act = act
        self.reopens = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "reopened" in record.getMessage():
            self.reopens += 1
            self.act()


@contextlib.contextmanager
def _at_reopen(act: Callable[[], None]) -> Iterator[_AtReopen]:
    hook = _AtReopen(act)
    logger = logging.getLogger(state_module.__name__)
    logger.addHandler(hook)
    try:
        yield hook
    finally:
        logger.removeHandler(hook)


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_checkpoint_failing_for_its_disk_after_a_reopen_says_so_and_does_not_ask_for_memory(
    tmp_path: Path,
) -> None:
    """A full disk after a checkpoint out of memory is not more memory's to fix: the state stops at the first
    failure with DuckDB's error and a disk message, on that write and every later one."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process

    def fill() -> None:  # the file can grow no more: a full disk for DuckDB (EFBIG rather than ENOSPC)
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size, resource.RLIM_INFINITY))

    try:
        with _at_reopen(fill) as disk:
            with pytest.raises(StateLocationError, match=r"File too large.*Free space on its disk") as failed:
                store_large_notes(state)
            with pytest.raises(StateLocationError, match="File too large"):
                put_document(state, "inference", parsed("inbox/jay/later.md", "# later\n"), raw_offset=None)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, previous)
        state.close()
    assert "memory_limit_mib" not in str(failed.value)
    assert disk.reopens == 1, "one reopen: the disk error is not retried with more memory"


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_reopen_a_read_holds_up_fails_the_write_at_once_and_the_next_write_reopens(tmp_path: Path) -> None:
    """A read the state cannot interrupt (a cursor it did not hand out) keeps DuckDB from closing it: the write
    fails within a moment, to be retried (the event loop was held 5 s, then the worker stopped on
    ResourceInUseException); once the read is done the next write reopens the state and keeps every note.

    A file with keys (an earlier release's): its commit past the limit cannot be rolled back either, which
    invalidates the database; a keyless one rolls back and runs the write again with more memory, no reopen."""
    state = with_keys(
        StateStore(tmp_path / "worker.duckdb", Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    )
    cursor = state._db.cursor()
    started = threading.Event()

    def read() -> None:
        with contextlib.suppress(duckdb.Error):
            started.set()
            cursor.execute(ENDLESS_READ).fetchall()

    busy = threading.Thread(target=read, daemon=True)
    busy.start()
    started.wait()
    try:
        with pytest.raises(StateBusyError, match="the write is retried"):
            store_large_notes(state, every_seen=False)
        cursor.interrupt()
        busy.join()
        stored = store_large_notes(state, every_seen=False)  # the worker's replay: idempotent by offset
        assert state.document_count() == stored
        assert duckdb_limits(state)[0] in ("128.0 MiB", "256.0 MiB", "512.0 MiB")
    finally:
        with contextlib.suppress(duckdb.ConnectionException):  # closed with the state it reopened
            cursor.interrupt()
        busy.join()
        state.close()


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("merging")
def test_a_state_file_that_cannot_be_opened_again_at_the_reopen_is_named_on_every_later_write(
    tmp_path: Path,
) -> None:
    """Closed for its reopen, the state's file is gone (a folder in its place): every later write says that
    (the worker's retries and its last line), not "Connection already closed"."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())

    def replace() -> None:
        path.rename(tmp_path / "moved.duckdb")
        path.mkdir()

    try:
        with _at_reopen(replace), pytest.raises(StateLocationError, match="Is a directory"):
            store_large_notes(state)
        with pytest.raises(StateLocationError, match="Is a directory"):
            put_document(state, "inference", parsed("inbox/jay/later.md", "# later\n"), raw_offset=None)
    finally:
        state.close()


# A second worker (or a rebuild, a migration): the state's open of another process on the same file.
_SECOND = (
    "import sys; from pathlib import Path; from sinks.errors import StateLockedError; from sinks.state import "
    "StateStore\ntry:\n    StateStore(Path(sys.argv[1])).close()\nexcept StateLockedError as exc:\n    print(exc); "
    "sys.exit(3)\n"
)


def _second(path: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _SECOND, str(path)]
    cwd = Path(__file__).resolve().parents[2]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("merging")
def test_no_second_process_opens_the_state_while_its_checkpoint_out_of_memory_reopens_it(
    tmp_path: Path,
) -> None:
    """Closed to be reopened with more memory, the state's file had no DuckDB lock on it: a second worker (or a
    rebuild) started then opened it, both writing; the file's claim refuses it, naming the lock and the holder."""
    path = tmp_path / "worker.duckdb"
    state = StateStore(path, Limits(memory_mib=64, threads=1, ceiling_mib=512), Metrics())
    seconds: list[subprocess.CompletedProcess[str]] = []
    try:
        with _at_reopen(lambda: seconds.append(_second(path))) as hook:
            stored = store_large_notes(state)
        assert state.document_count() == stored
    finally:
        state.close()
    assert hook.reopens >= 1 and len(seconds) == hook.reopens
    for second in seconds:
        assert second.returncode == 3, second.stdout + second.stderr
        assert second.stdout.strip() == (
            f"cannot open the state file {path}: its lock file {path}.lock is held by another process (PID "
            f"{os.getpid()}). {state_module.STATE.if_locked}"
        )
    # Let go at its close (DuckDB's own lock goes once the close's checkpoint, in a thread of its own, is done).
    with lock_path(path).open("rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
