"""Closing a DuckDB connection or cursor that reads in other threads may still hold: the reads are interrupted
until the close ends, and the close's own work (DuckDB writing its WAL into the file) is waited for: at a stop however
long, on the event loop 1 s at most."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import duckdb

log = logging.getLogger(__name__)

ROUND_SECONDS = 0.01  # the reads are interrupted this often, on the caller's thread, while the close runs
LONG_ROUNDS = 100  # a close still under way after this many rounds (1 s at least) says what it waits for
CLOSE_ATTEMPTS = 20  # rounds a read may refuse a close in on the event loop (0.2 s at least)
STOP_ATTEMPTS = 1000  # the same at a stop's close (10 s at least, of the 15 s a stop has)


@dataclass(frozen=True)
class Patience:
    """How long a close is waited for: until a read refused it in `refused` rounds of interrupts, or after `rounds`
    in all whatever holds it (None: DuckDB's own close waited for however long)."""

    refused: int
    rounds: int | None


# On the event loop (a write's reopen of the state, a replaced state's close, a cancelled briefing's cursor): a read
# refusing the close, or a close of its own (an invalidated connection's, a loaded machine), holds the loop 1 s at
# most; the write then fails (StateBusyError, retried) and the next one waits for the same close, still under way.
ON_LOOP = Patience(CLOSE_ATTEMPTS, LONG_ROUNDS)
# A stop's close runs in its own thread, and the stop's hard exit bounds it (15 s after the signal).
AT_STOP = Patience(STOP_ATTEMPTS, None)


@dataclass
class _Close:
    """A close under way in its own thread: done once DuckDB closed the connection; `refused` counts the times
    DuckDB refused it because a read still ran on it ("connection is busy")."""

    done: threading.Event = field(default_factory=threading.Event)
    refused: int = 0


def close_interrupting(
    closing: duckdb.DuckDBPyConnection,
    reads: Callable[[], Iterable[duckdb.DuckDBPyConnection]] | None = None,
    patience: Patience = ON_LOOP,
    what: str = "a DuckDB connection",
) -> bool:
    """Close `closing` (a cursor, or a connection with `reads()` its cursors), interrupting the reads still running
    until it is closed; False once `patience` ran out (the close goes on in its thread, uninterrupted)."""
    # DuckDB refuses to close a busy cursor ("connection is busy"), but a read only starting blocks the close until
    # it ends, and an interrupt sent before it started is lost: a briefing's read of minutes froze the event loop.
    # So the close waits in a thread of its own while this one interrupts the reads until the close is done. Only
    # the rounds DuckDB refused it count toward `patience.refused`: a close slowed by its own checkpoint (a large WAL,
    # a loaded machine) has no read to interrupt, and was taken for a busy one after 0.2 s (a clean stop raised
    # StateBusyError). `patience.rounds` bounds the rest where the caller holds the event loop.
    close = _closing(closing)
    rounds = busy = last_busy = 0
    seen = close.refused
    while True:
        for cursor in reads() if reads is not None else (closing,):
            with contextlib.suppress(duckdb.ConnectionException):  # closed by its read already
                cursor.interrupt()
        if close.done.wait(ROUND_SECONDS):
            return True
        rounds += 1
        if close.refused != seen:
            seen, busy, last_busy = close.refused, busy + 1, rounds
        if busy >= patience.refused or rounds == patience.rounds:
            return False
        if rounds == LONG_ROUNDS:
            _say_waiting(what, reading=rounds - last_busy < 5)  # refused within the last rounds


def _say_waiting(what: str, reading: bool) -> None:
    if reading:
        log.warning(
            "%s has been closing for over 1 s: a read still runs on it and is interrupted every 10 ms until it gives "
            "the connection back",
            what,
        )
    else:
        log.warning(
            "%s has been closing for over 1 s, no read refusing it: DuckDB's own close (at a file's last close, its "
            "checkpoint of the WAL into the file) is waited for, nothing to do",
            what,
        )


# The closes under way, so that a second call (the next write's reopen) waits for the first rather than closing
# the same connection beside it.
_CLOSES: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, _Close] = weakref.WeakKeyDictionary()
_CLOSES_LOCK = threading.Lock()


def _closing(connection: duckdb.DuckDBPyConnection) -> _Close:
    """The close of `connection`, by a thread started on the first call."""
    with _CLOSES_LOCK:
        if (close := _CLOSES.get(connection)) is None:
            close = _CLOSES[connection] = _Close()
            # Not a daemon: the exit waits for it as for the read it waits for (an executor's thread). A daemon still in
            # DuckDB's close as the interpreter finalized aborted the process (SIGABRT, "FATAL: exception not
            # rethrown") after a stop that had gone well.
            threading.Thread(target=_close, args=(connection, close), name="duckdb-close").start()
    return close


def _close(connection: duckdb.DuckDBPyConnection, close: _Close) -> None:
    with contextlib.suppress(duckdb.ConnectionException):  # closed already: a cursor by the state's close
        while True:
            try:
                connection.close()
                break
            except duckdb.ResourceInUseException:
                close.refused += 1
                time.sleep(ROUND_SECONDS)  # the interrupted read is giving its connection back
    close.done.set()
