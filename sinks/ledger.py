"""The watcher's ledger: what Kafka acknowledged per path, so a restart republishes nothing unchanged.

Read from a copy in memory (a rescan compares every path: a DuckDB query per path cost 2 ms, 190 s for 100,000
files) and written in batches (an INSERT per acknowledged file cost 18 ms). A batch not yet written when the
process dies costs only a second send of those files at the next start, which the worker stores once (it keys
documents by path and content hash). A batch DuckDB refuses (a full disk, a lock, an I/O error) stays in memory and
is written by a later flush, tried at growing intervals up to a minute; a refusal that left the connection unusable
(DuckDB invalidates a database whose checkpoint failed) closes it, and that flush opens the file again. The process
holds the file's claim (sinks.file_claim) meanwhile: no second watcher or backfill starts on it in that gap.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
from predigest_native import TypedColumns

from sinks import duck
from sinks.clock import SYSTEM_CLOCK
from sinks.errors import DuckFileError, LedgerWriteError
from sinks.file_claim import FileClaim

log = logging.getLogger(__name__)

LEDGER = duck.DuckFile(
    "watcher ledger",
    # Said after the holder (`predigest backfill` (PID n)), or after DuckDB's own lock's line (a `duckdb` shell).
    if_locked="One watcher or backfill at a time runs on a root: wait for its end, or stop it",
    if_damaged="move it aside and start the watcher again: it republishes every file, which the worker stores once",
)
FLUSH_ROWS = 2000  # acknowledgements written in one statement
FLUSH_SECONDS = 1.0  # and no later than this after the first of them
RETRY_MAX_SECONDS = 60.0  # a refusal that lasts (a full disk) is retried, and said, once a minute at most

Row = tuple[int, float, str]  # size, mtime, sha256
_COLUMNS = ("path", "size", "mtime", "sha256")
_TYPES = ("text", "int64", "float64", "text")  # predigest_native.TypedColumns's names of the table's types
_KEPT = "they are kept for the next flush (a stop before it sends those files again)"
# No flush comes after a stop: the operator frees the disk; nothing is lost, those files are only sent twice.
_AT_STOP = (
    "not written at this stop: the next start (of the watcher or a backfill) sends those files again, which the "
    "worker stores once; free space on its disk or fix its folder before that start"
)


def _create(db: duckdb.DuckDBPyConnection, path: Path) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS ledger (path VARCHAR PRIMARY KEY, size BIGINT, mtime DOUBLE, sha256 VARCHAR)"
    )


def _answers(db: duckdb.DuckDBPyConnection) -> bool:
    try:
        db.execute("SELECT 1").fetchall()
    except duckdb.Error:
        return False
    return True


def _reason(exc: BaseException) -> str:
    """The first line of the first DuckDB error behind `exc` (a failed rollback's hides the write's own); a sinks
    error of the reopen says it all (what to do about a lock or a damaged file)."""
    while not isinstance(exc, DuckFileError):
        behind = exc.__cause__ or exc.__context__
        if not isinstance(behind, duckdb.Error):
            break
        exc = behind
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _checkpoint_reason(exc: duckdb.Error) -> str:
    """Why the checkpoint after a durable commit failed: DuckDB's text after its own advice (reopen the database)."""
    first = _reason(exc)
    return first.split(" to recover. ", 1)[-1]


def _folders(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


class Ledger:
    """One row per root-relative path: size, mtime and sha256 of the last acknowledged version."""

    def __init__(self, path: Path, clock: Callable[[], float] = SYSTEM_CLOCK.monotonic) -> None:
        self._path = path
        # DuckDB's lock goes with a connection a refusal closes (below); this claim stays until close().
        self._claim = FileClaim(path, LEDGER)
        try:
            # None once a refusal left it unusable: the next write opens the file again.
            self._db: duckdb.DuckDBPyConnection | None = duck.open_checked(path, LEDGER, _create)
        except BaseException:
            self._claim.release()
            raise
        self._clock = clock
        rows = self._db.execute("SELECT path, size, mtime, sha256 FROM ledger").fetchall()
        self._rows: dict[str, Row] = {str(r[0]): (int(r[1]), float(r[2]), str(r[3])) for r in rows}
        self._stats = {p: (row[0], row[1]) for p, row in self._rows.items()}  # what a rescan compares
        self._folders = Counter(f for p in self._rows for f in _folders(p))
        self._unwritten: dict[str, Row | None] = {}  # None: forgotten
        self._oldest_unwritten = 0.0
        self._retry_at = 0.0  # a refused flush is not retried at every pass
        self._retry_delay = FLUSH_SECONDS  # doubled at each refusal in a row, up to RETRY_MAX_SECONDS
        self._refusal = "not tried"  # DuckDB's reason for the last refused flush

    def close(self, *, write: bool = True) -> None:
        """The last flush, tried once (not at all without `write`: the caller's flush was refused a moment ago), then
        the connection closed; rows left unwritten raise LedgerWriteError: the next start sends their files again."""
        try:
            if write and self._unwritten:
                try:
                    self._write()
                except (duckdb.Error, DuckFileError) as exc:
                    raise LedgerWriteError(self._refused(exc, _AT_STOP)) from exc
            if self._unwritten:
                raise LedgerWriteError(self._said(self._refusal, _AT_STOP))
        finally:
            try:
                if self._db is not None:
                    self._db.close()
            finally:
                self._claim.release()

    def get(self, path: str) -> Row | None:
        return self._rows.get(path)

    def acknowledge(self, path: str, size: int, mtime: float, sha256: str) -> None:
        """Kafka has this version; written by a later flush (the caller's flush_if_due, never inside its send)."""
        self._set(path, (size, mtime, sha256))

    def acknowledge_many(self, rows: Sequence[tuple[str, int, float, str]]) -> None:
        """Many acknowledgements, written at once (the backfill's own batches)."""
        known, stats, unwritten = self._rows, self._stats, self._unwritten
        # A set: a path twice in the batch is one new path, its folders counted once (as _set counts them).
        self._folders.update(
            f for path in {path for path, *_ in rows if path not in known} for f in _folders(path)
        )
        for path, size, mtime, sha256 in rows:
            known[path] = unwritten[path] = (size, mtime, sha256)
            stats[path] = (size, mtime)
        self.flush()

    def forget(self, path: str) -> None:
        if self._rows.pop(path, None) is not None:
            del self._stats[path]
            self._folders.subtract(_folders(path))
        self._note_unwritten(path, None)

    def entries(self) -> dict[str, Row]:
        """Every acknowledged path with its (size, mtime, sha256): a copy."""
        return dict(self._rows)

    def known(self) -> Mapping[str, Row]:
        """Every acknowledged path, read-only and live: for lookups within one step of the event loop."""
        return self._rows

    def stats(self) -> dict[str, tuple[int, float]]:
        """(size, mtime) of every acknowledged path: a copy, made in C (a rescan compares it in a thread)."""
        return dict(self._stats)

    def paths(self) -> set[str]:
        return set(self._rows)

    def has_folder(self, folder: str) -> bool:
        """True when an acknowledged path lies below `folder`."""
        return self._folders[folder] > 0

    def flush_if_due(self) -> None:
        """Flush at FLUSH_ROWS rows or FLUSH_SECONDS after the first; after a refused flush, once its delay passed."""
        now = self._clock()
        if (
            self._unwritten
            and now >= self._retry_at
            and (len(self._unwritten) >= FLUSH_ROWS or now - self._oldest_unwritten >= FLUSH_SECONDS)
        ):
            self.flush()

    def flush(self) -> None:
        """Write what was acknowledged or forgotten since the last flush, in one transaction; refused by DuckDB, it
        stays to be written by the next flush and LedgerWriteError says why."""
        if not self._unwritten:
            return
        try:
            self._write()
        except (duckdb.Error, DuckFileError) as exc:
            self._retry_at = self._clock() + self._retry_delay
            self._retry_delay = min(self._retry_delay * 2, RETRY_MAX_SECONDS)
            raise LedgerWriteError(self._refused(exc, _KEPT)) from exc
        self._retry_delay = FLUSH_SECONDS

    def _write(self) -> None:
        """The unwritten rows in one transaction, on the connection opened again if a refusal closed it."""
        gone = [p for p, row in self._unwritten.items() if row is None]
        kept = [(p, *row) for p, row in self._unwritten.items() if row is not None]
        db = self._db if self._db is not None else self._reopen()
        try:
            with self._registered(db, kept), duck.transaction(db):
                if gone:
                    db.execute("DELETE FROM ledger WHERE path IN (SELECT unnest($1))", [gone])
                if kept:
                    db.execute("INSERT OR REPLACE INTO ledger SELECT * FROM acknowledged")
        except duckdb.Error as exc:
            if not _answers(db):  # invalidated (a failed checkpoint), or a rollback that failed too
                self._db = None
                with contextlib.suppress(duckdb.Error):
                    db.close()
            if not duck.commit_was_durable(exc):
                raise
            # In the WAL, which the next open replays: written. Kept, they were written again, and a stop's line
            # counted them among the rows not written.
            log.warning(
                "the %s %s holds %d acknowledgement(s) in its WAL but could not checkpoint them into the file (%s): "
                "they are kept; the next write opens the file again",
                LEDGER.what,
                self._path,
                len(self._unwritten),
                _checkpoint_reason(exc),
            )
        self._unwritten = {}

    def _reopen(self) -> duckdb.DuckDBPyConnection:
        self._db = duck.open_checked(self._path, LEDGER, _create)
        return self._db

    def _refused(self, exc: BaseException, then: str) -> str:
        self._refusal = _reason(exc)
        return self._said(self._refusal, then)

    def _said(self, reason: str, then: str) -> str:
        return (
            f"cannot write {len(self._unwritten)} acknowledgement(s) to the {LEDGER.what} {self._path}: {reason}; "
            f"{then}"
        )

    @contextmanager
    def _registered(
        self, db: duckdb.DuckDBPyConnection, kept: list[tuple[str, int, float, str]]
    ) -> Iterator[None]:
        """The acknowledged rows as the view `acknowledged`, one Arrow batch: DuckDB's conversion of four list
        parameters cost the backfill ~3 µs a file. Dropped after the transaction (an aborted one refuses it)."""
        if not kept:
            yield
            return
        db.register(
            "acknowledged",
            TypedColumns(list(_COLUMNS), list(_TYPES), [list(col) for col in zip(*kept, strict=True)]),
        )
        try:
            yield
        except BaseException:
            # An invalidated connection refuses it too: the failure being raised says why.
            with contextlib.suppress(duckdb.Error):
                db.unregister("acknowledged")
            raise
        db.unregister("acknowledged")

    def _set(self, path: str, row: Row) -> None:
        if path not in self._rows:
            self._folders.update(_folders(path))
        self._rows[path] = row
        self._stats[path] = (row[0], row[1])
        self._note_unwritten(path, row)

    def _note_unwritten(self, path: str, row: Row | None) -> None:
        if not self._unwritten:
            self._oldest_unwritten = self._clock()
        self._unwritten[path] = row
