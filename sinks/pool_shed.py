"""DuckDB's memory limit lowered for a moment, which evicts its cached blocks down to it (a briefing's reads filled
the buffer pool that its model and files need next), and set back as it was after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb


@contextmanager
def lowered_limit(db: duckdb.DuckDBPyConnection, memory: int | None, mib: int) -> Iterator[bool]:
    """The limit at `mib` inside the block and `memory` after; False (nothing set) when `memory` is None or DuckDB
    refused."""
    if memory is None:
        yield False
        return
    lowered = False
    with contextlib.suppress(duckdb.Error):  # a read elsewhere pins more than that (or the state is closed)
        db.execute(f"SET memory_limit = '{min(mib, memory)}MiB'")
        lowered = True
    try:
        yield lowered
    finally:
        with contextlib.suppress(duckdb.Error):
            db.execute(f"SET memory_limit = '{memory}MiB'")
