"""A watcher ledger whose connection a refusal closed (DuckDB invalidated it): what the tests of its reopen share."""

from __future__ import annotations

import resource
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger

Rows = list[tuple[str, int, float, str]]


@contextmanager
def full_disk(path: Path, size: int | None = None) -> Iterator[None]:
    """No file of this process may grow past `size` (the ledger's): a full disk for DuckDB (EFBIG, not ENOSPC)."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size if size is None else size, limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, previous)


def checkpoint_at_every_commit(path: Path, *, wal_first: bool = False) -> None:
    """As another user of the ledger's database: a checkpoint at every commit, which writes the file itself;
    `wal_first`, the commit written to the WAL before it (DuckDB skips the WAL for a commit it deems large)."""
    with duckdb.connect(str(path)) as setting:
        setting.execute("SET checkpoint_threshold = '1KB'")
        if wal_first:
            setting.execute("SET auto_checkpoint_skip_wal_threshold = 1000000000")


def invalidated(path: Path, clock: Callable[[], float], rows: Rows) -> Ledger:
    """A ledger whose write of `rows` a full disk refused at its checkpoint: its connection closed, the rows kept
    for the next flush, which opens the file again."""
    ledger = Ledger(path, clock=clock)
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "a")])
    checkpoint_at_every_commit(path)
    with full_disk(path), pytest.raises(LedgerWriteError, match=r"checkpoint.*File too large"):
        ledger.acknowledge_many(rows)
    return ledger
