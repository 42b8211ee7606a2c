"""The cursors a state hands to reads in other threads (a briefing, /status, the browser), to interrupt their
queries when the state closes its connection."""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

import duckdb

from sinks import duck_close


class Idle(Protocol):
    """A window whose cursor reads nothing now (a briefing between its reads)."""

    def reads_on(self, cursor: duckdb.DuckDBPyConnection) -> bool: ...


class Cursors:
    """The cursors handed out on one connection, held weakly: a read that is done with its cursor drops it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # readers open cursors of their own cursor in their thread
        self._open: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()

    def track(self, cursor: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        with self._lock:
            self._open.add(cursor)
        return cursor

    def reading(self, idle: Idle | None = None) -> bool:
        """Whether a cursor other than `idle`'s is open (a read in another thread may run on it)."""
        with self._lock:
            return any(idle is None or not idle.reads_on(c) for c in self._open)

    def close(self, db: duckdb.DuckDBPyConnection, what: str, patience: duck_close.Patience) -> bool:
        """Close `db`, interrupting the reads on these cursors until it is closed (duck_close.close_interrupting);
        False once `patience` ran out."""
        return duck_close.close_interrupting(db, self._listed, patience, what)

    def _listed(self) -> list[duckdb.DuckDBPyConnection]:
        with self._lock:
            return list(self._open)
