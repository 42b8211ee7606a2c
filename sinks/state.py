"""The worker's DuckDB state, one file behind one facade: documents, emissions, applied offsets and counts.

A materialised view of the documents and briefings topics. Each concern is a small sink of its own
(`documents`, `emissions`, `offsets`, `counts`, over `schema` and the `duck` opener); this facade opens the
file and runs the writes that span two of them (a record and its offset) in one transaction.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import duckdb

from processors.models import Briefing, Document, WindowBounds
from processors.wire import DocumentRecord
from sinks import collector, duck, duck_close, pool_shed, schema, vacuum
from sinks.counts import Counts
from sinks.documents import Documents
from sinks.emission_bodies import Body
from sinks.emissions import EmissionRecord, Emissions
from sinks.errors import DuckFileError, StateBusyError, StateMemoryError
from sinks.file_claim import FileClaim
from sinks.metrics import Metrics
from sinks.offsets import AppliedOffsets, Position
from sinks.source_rows import SourceRows
from sinks.state_cursors import Cursors
from sinks.state_reader import StateReader
from sinks.state_reads import StateReads, serialised
from sinks.state_retry import CheckpointLost, retried
from sinks.vacuum import Vacuumed
from sinks.window_reads import StoredWindow

__all__ = ["STATE", "EmissionRecord", "Position", "StateStore", "Vacuumed"]

log = logging.getLogger(__name__)

# A raised memory limit is halved back toward the configured one after this many writes: a reader's pinch (a
# briefing holding memory at a commit) is not kept for good, and large notes raise it again, one retry per 100.
RAISED_WRITES = 100
SHED_MIB = 16  # the memory limit `shed_cache` sets for a moment: DuckDB evicts its cached blocks down to it

STATE = duck.DuckFile(
    "state file",
    if_locked="Only the worker or a rebuild opens it, one at a time: wait for a rebuild's end, or stop the other "
    "process; ask a running worker over HTTP (predigest status/flush)",
    if_damaged="the worker sets it aside and rebuilds it from Kafka, as `predigest rebuild` does while it is stopped",
    if_out_of_memory="raise duckdb.memory_limit_mib (PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB) and restart the worker; "
    "the file is not damaged",
    # Each checkpoint writes what was appended since the last one as new row groups, and DuckDB's vacuum then
    # merges neighbouring small row groups, recompressing every note in them: the notes' text was written
    # again at one checkpoint in two, more often as the state grew (half the commit's CPU at 10k notes).
    # Without it a checkpoint writes only what it brings; the state's few deleted rows stay as marked.
    settings=("SET max_vacuum_tasks = 0",),
)


class StateStore(StateReads):
    """Idempotent writes: a record at or below the last applied offset of its partition changes nothing."""

    def __init__(
        self, path: Path, limits: duck.Limits = duck.NO_LIMITS, metrics: Metrics | None = None
    ) -> None:
        self._path = path
        self._configured = self._limits = limits
        self._writes_raised = 0  # writes since the memory limit was last raised
        self._metrics = metrics
        # A checkpoint refused (out of memory, or its disk failing): the invalidated state stays closed until the
        # worker restarts.
        self._refusal: DuckFileError | None = None
        # Invalidated and not closed yet (a read held it): reopened by the next write, with what ran out.
        self._reopening: tuple[str, duckdb.Error] | None = None
        self._closed = False  # by `close`, for good
        # How long a close is waited for (duck_close): a write's reopen holds the event loop, 1 s at most; a stop's
        # close has its thread and the stop's 15 s.
        self._patience = duck_close.ON_LOOP
        self._lock = threading.RLock()  # one user of the connection at a time (sinks.state_reads.Serialised)
        # DuckDB's lock goes with the connection, which a checkpoint out of memory closes to reopen: held till close.
        self._claim = FileClaim(path, STATE)
        try:
            db = duck.open_checked(path, STATE, schema.ensure, limits)
        except BaseException as exc:
            self._claim.release()
            if isinstance(exc, StateMemoryError):
                self._refused("open")
            raise
        self._open(db)

    def _open(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db
        self._cursors = Cursors()  # handed to reads in other threads: their queries are stopped at a close
        self.offsets = AppliedOffsets(self._db)
        self.docs = Documents(self._db)
        self.sources = SourceRows(self._db)
        self.emissions = Emissions(self._db)
        self.counts = Counts(self._db)

    @serialised
    def answers(self) -> int:
        """The count of current documents, in a transaction of its own: raises too when a write could not begin (a
        transaction left open or aborted by a failed answer: the count alone answers in it), closed or invalidated."""
        with duck.transaction(self._db):
            return self.counts.document_count()

    @serialised
    def vacuum_fits(self) -> bool:
        """Whether the notes, merged by a vacuum, would still read within the configured memory (sinks.vacuum)."""
        return vacuum.merged_reads_fit(self._db, self._configured.memory_mib)

    def check(self, between: Callable[[], object] = lambda: None) -> None:
        """Raise StateUnreadableError unless every block of the file reads back, a few thousand rows a step, each
        under the state's lock (a write waits a step at most); `between` runs after each (the cache shed)."""
        for _ in duck.locked_steps(duck.integrity_steps(self._db, self._path, STATE), self._lock):
            between()

    def window(self, axis: str, window: WindowBounds, baseline: Document | None = None) -> StoredWindow:
        """The axis window's sources as a briefing reads them, pinned now, on a cursor of their own (close it)."""
        pinned = (baseline.path, baseline.sha256) if baseline is not None else None
        return StoredWindow(self._cursor(), axis, window, pinned, self.unreadable())

    def reader(self) -> StateReader:
        """Reads on a cursor of their own, for a thread beside the event loop (closed with this state too)."""
        return StateReader(self._cursor(), self._path, STATE, self._track, self.unreadable("browse"))

    @serialised
    def close(self, checkpoint: bool = False) -> None:
        """Close the state once, interrupting reads still running; with `checkpoint` (a clean stop) its WAL goes into
        the file first, or the DuckFileError saying why not is raised once closed (the WAL is replayed at the next open)."""
        if self._closed:
            return
        self._closed = True
        try:
            if checkpoint:  # a stop's close, in its own thread and the stop's 15 s (not a replaced state's)
                self._patience = duck_close.AT_STOP
                self._checkpoint()
        finally:
            if not self._close_interrupting():  # its DuckDB lock held till then
                log.warning(
                    "the %s %s closes once what holds it ends (a read still running on it, or DuckDB's own close)",
                    STATE.what,
                    self._path,
                )
            self._claim.release()

    def _checkpoint(self) -> None:
        if self._refusal is not None:  # closed already when it refused: its WAL keeps what it held
            raise type(self._refusal)(str(self._refusal))
        if self._reopening is not None:  # invalidated: reopened with more memory, and checkpointed there
            self._checkpoint_with_more_memory(*self._reopening)
        try:
            duck.checkpoint(self._db, self._path, STATE)
        except StateMemoryError as failed:  # as a write's checkpoint: more memory, up to the ceiling
            if not isinstance(failed.__cause__, duckdb.Error):
                raise
            self._checkpoint_with_more_memory(str(failed.__cause__), failed.__cause__)

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        # Opened under the lock, never on a connection a write is reopening nor under a lowered limit it would meet.
        with self._lock:
            return self._track(self._db.cursor())

    def _track(self, cursor: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        return self._cursors.track(cursor)  # the cursors of the connection open now, not of one it reopened

    def _close_invalidated(self, reason: str, exc: duckdb.Error) -> None:
        """Close the invalidated state to reopen it: DuckDB refuses while a cursor runs a query, so the reads
        still running are interrupted (each fails; its caller retries or answers again). Raises StateBusyError
        if one still runs: the next write closes and reopens it."""
        self._reopening = (reason, exc)
        if self._close_interrupting():
            self._reopening = None
            return
        raise StateBusyError(
            f"the {STATE.what} {self._path} must be reopened (its checkpoint ran out of memory: {reason}) and its close "
            "has not ended (a read still refusing it, or DuckDB's own close under way); the write is retried, nothing "
            "to do unless this repeats"
        ) from exc

    def _close_interrupting(self) -> bool:
        """Close the connection, interrupting the reads on its cursors until it is closed; False once `_patience` ran
        out (a read refusing it, or on the event loop a slow close of its own)."""
        return self._cursors.close(self._db, f"the {STATE.what} {self._path}", self._patience)

    # Writes: each record with its offset, in one transaction.

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """A write whose commit may checkpoint: past the memory limit, the state reopens with more memory; a
        durable commit is then done, a lost one raises CheckpointLost so the write runs again."""
        if self._refusal is not None:
            # The invalidated state was closed: every later write says why (the worker's retries and its last
            # line), not that a connection is closed.
            raise type(self._refusal)(str(self._refusal))
        if self._closed:  # for good, by a stop: never reopened by the checkpoint pending below
            raise duckdb.ConnectionException(f"the {STATE.what} {self._path} is closed")
        if self._reopening is not None:
            self._checkpoint_with_more_memory(*self._reopening)
        try:
            yield
        except duckdb.Error as exc:
            reason = duck.checkpoint_out_of_memory(exc)
            if reason is None and (reason := duck.out_of_memory(exc)) is not None and self._usable():
                # A statement or a commit past the limit (a 100k window's ~75 MB briefing JSON is one string; a
                # reader holding the memory at the commit) rolled back and left the database usable: more
                # memory, and the write runs again. A commit that could not flush invalidates it: reopened.
                self._more_memory(reason, exc)
                raise CheckpointLost from exc
            if reason is None:
                raise
            self._checkpoint_with_more_memory(reason, exc)
            if not duck.commit_was_durable(exc):
                raise CheckpointLost from exc
        self._lower_limit()

    def _checkpoint_with_more_memory(self, reason: str, exc: duckdb.Error) -> None:
        """Reopen the invalidated state with twice the memory and checkpoint, up to the limits' ceiling."""
        memory = self._limits.memory_mib
        self._close_invalidated(reason, exc)
        while (raised := self._limits.raised()) is not None:
            memory = raised
            self._raise_limit(memory, f"the state's checkpoint ran out of memory ({reason}); reopened")
            try:
                # Not checked block by block as at a start: it read back a moment ago, and the check's scan of
                # the notes' text needs as much memory as the checkpoint.
                self._open(duck.connect(self._path, STATE, self._limits))
            except DuckFileError as failed:  # its folder or disk: that error from now on, not a closed one
                self._refuse(failed, exc)
            try:
                self._db.execute("CHECKPOINT")
                return
            except duckdb.Error as again:
                if (more := duck.out_of_memory(again)) is None:
                    # Not memory (a full disk): more of it would not help, and the operator needs the real error.
                    self._refuse(duck.checkpoint_error(again, self._path, STATE), again)
                self._close_invalidated(more, again)
                reason, exc = more, again
        self._refused("checkpoint")
        self._refuse(
            StateMemoryError(
                f"the {STATE.what} {self._path} cannot checkpoint within {memory} MiB ({reason}); "
                f"{STATE.if_out_of_memory}"
            ),
            exc,
        )

    def _refuse(self, refusal: DuckFileError, exc: duckdb.Error) -> NoReturn:
        """Keep the state closed until the worker restarts, every later write raising `refusal` (what to do)."""
        self._refusal = refusal
        with contextlib.suppress(StateBusyError):  # a read still runs on it: no reopen to wait for
            self._close_invalidated(str(refusal), exc)
        raise refusal from refusal.__cause__ or exc

    def _more_memory(self, reason: str, exc: duckdb.Error) -> None:
        """Double the memory limit of the open state for a write that ran out, up to the limits' ceiling."""
        raised = self._limits.raised()
        if raised is None:
            self._refused("write")
            raise StateMemoryError(
                f"the {STATE.what} {self._path} cannot write within {self._limits.memory_mib} MiB ({reason}); "
                f"{STATE.if_out_of_memory}"
            ) from exc
        self._raise_limit(raised, f"a write to the state ran out of memory ({reason}); retried")
        self._db.execute(f"SET memory_limit = '{raised}MiB'")

    def shed_cache(self, idle: StoredWindow | None = None) -> bool:
        """Evict DuckDB's cached blocks now, its memory limit as it was after: a briefing's reads filled the
        buffer pool (~160 MiB) that its model and files need next. False when it could not (`lowered_limit`)."""
        with self.lowered_limit(SHED_MIB, idle) as lowered:
            return lowered

    @contextmanager
    def lowered_limit(self, mib: int, idle: StoredWindow | None = None) -> Iterator[bool]:
        """DuckDB's memory limit at `mib` inside the block (cached blocks evicted), under the state's lock; False when
        DuckDB could not, has no limit, or a reader's cursor other than `idle`'s is open."""
        with self._lock:
            # A read in another thread must never meet the lowered limit.
            memory = None if self._cursors.reading(idle) else self._limits.memory_mib
            with pool_shed.lowered_limit(self._db, memory, mib) as lowered:
                yield lowered

    def _lower_limit(self) -> None:
        """Halve a raised memory limit, not below the configured one, once it served RAISED_WRITES writes."""
        memory, configured = self._limits.memory_mib, self._configured.memory_mib
        if memory is None or configured is None or memory <= configured:
            return
        self._writes_raised += 1
        if self._writes_raised < RAISED_WRITES:
            return
        lower = max(configured, memory // 2)
        try:
            self._db.execute(f"SET memory_limit = '{lower}MiB'")
        except duckdb.Error:  # DuckDB could not free the memory above it now: the next write tries again
            return
        self._limits = replace(self._limits, memory_mib=lower)
        self._writes_raised = 0
        log.info("the state's memory limit is back to %d MiB after %d writes", lower, RAISED_WRITES)

    def _raise_limit(self, memory: int, what: str) -> None:
        """Take `memory` MiB from now on, counted and logged with the setting an operator should raise."""
        self._limits = replace(self._limits, memory_mib=memory)
        self._writes_raised = 0
        if self._metrics is not None:
            self._metrics.state_memory_retries.inc()
        log.warning("%s with %d MiB. Raise duckdb.memory_limit_mib to at least that", what, memory)

    def _usable(self) -> bool:
        """False when the database must be reopened: invalidated (a commit that failed to flush) or closed, or its
        rollback ran out of memory too, leaving the transaction aborted and open (closing the connection ends it)."""
        try:
            self._db.execute("SELECT 1")
        except duckdb.Error as exc:
            if duck.unusable(exc) or isinstance(exc, duckdb.TransactionException) or duck.out_of_memory(exc):
                return False
            raise
        return True

    def _refused(self, operation: str) -> None:
        if self._metrics is not None:
            self._metrics.state_memory_refused.labels(operation=operation).inc()

    @contextmanager
    def _claiming(self) -> Iterator[None]:
        """One transaction that claims offsets: what the sinks keep in memory follows its commit or rollback."""
        try:
            with self._writing(), duck.transaction(self._db):
                yield
        except BaseException:
            self.offsets.settle(committed=False)
            self.docs.settle(committed=False)
            raise
        self.offsets.settle(committed=True)
        self.docs.settle(committed=True)

    @retried
    def apply_batch(self, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
        """Apply documents records in one transaction, as if one by one; per record, whether a briefing sees it."""
        with collector.paused(), self._claiming():
            fresh = self.offsets.claim([position for _, position in items])
            records = [r for (r, _), new in zip(items, fresh, strict=True) if new]
            written = self.docs.write(records)
            self.sources.write(written.contents)  # what briefings read of each new version, worked out once
            outcomes = iter(written.outcomes)
            return [next(outcomes) if new else False for new in fresh]

    @retried
    def mark_applied(self, position: Position) -> None:
        """Remember a record that writes nothing (an unreadable one), so a replay starts after it."""
        with self._claiming():
            self.offsets.claim([position])

    @serialised
    def vacuum(self) -> Vacuumed | None:
        """One checkpoint with DuckDB's vacuum on (sinks.vacuum), on the writes' path: a memory pinch reopens the
        state with more memory and runs it again while below the ceiling; None at it (not run: nothing to retry)."""
        while self._limits.raised() is not None:
            with contextlib.suppress(CheckpointLost), self._writing():
                return vacuum.run(self._db)
        return None

    @retried
    def restore_emission(self, briefing: Briefing, basename: str, position: Position | None = None) -> bool:
        """Record an emission read back from `predigest.briefings`; True if this state did not hold it."""
        with self._claiming():
            return self.offsets.claim([position])[0] and self.emissions.restore(briefing, basename)

    @retried
    def record_emission(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str | bytes | None,  # None: `body` packs it already
        emitted_at: datetime,
        body: Body | None = None,
    ) -> bool:
        with self._writing():
            return self.emissions.record(briefing, basename, markdown, emitted_at, body)
        # Its commit is durable, its answer lost: True (send it) rather than a briefing never sent.
        return True

    @retried
    def mark_delivered(self, axis: str, window_end: datetime, trigger: str, when: datetime) -> None:
        with self._writing():
            self.emissions.mark_delivered(axis, window_end, trigger, when)
