"""The one way predigest opens a DuckDB file (state, ledger, arXiv cache), its errors named for what they are."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from sinks.errors import (
    DuckFileError,
    StateLocationError,
    StateLockedError,
    StateMemoryError,
    StateUnreadableError,
)

# DuckDB reports every file problem as an IOException; these say the folder or the disk is the trouble, not
# the file's bytes (which are then left where they are).
_LOCATION = (
    "No such file or directory",
    "Permission denied",
    "Is a directory",
    "Not a directory",
    "Read-only file system",
    "No space left on device",
)
_HEADER_BYTES = 3 * 4096  # DuckDB's file header and its two database headers, before the first block
DuckConfig = dict[str, str | bool | int | float | list[str]]  # what `duckdb.connect(config=…)` takes


@dataclass(frozen=True)
class DuckFile:
    """A DuckDB file of predigest: its name in messages and what the operator does when it is locked or damaged."""

    what: str  # "state file", "watcher ledger", "arXiv cache"
    if_locked: str
    if_damaged: str
    if_out_of_memory: str = "give the process more memory; the file is not damaged"
    settings: tuple[str, ...] = ()  # SET statements of this file's own, run at every connect


@dataclass(frozen=True)
class Limits:
    """What DuckDB may take of the process: its buffer memory (MiB) and its threads; None leaves DuckDB's default
    (80 % of the machine's RAM, one thread per core). `ceiling_mib`: the most a state past its memory may raise
    it to (None: no raise)."""

    memory_mib: int | None = None
    threads: int | None = None
    ceiling_mib: int | None = None

    def config(self) -> DuckConfig:
        """These limits as DuckDB takes them at open: in force while it replays the file's WAL, which runs inside
        `duckdb.connect`, before any SET (empty: DuckDB's defaults, and a connection as any other to the path)."""
        out: DuckConfig = {} if self.memory_mib is None else {"memory_limit": f"{int(self.memory_mib)}MiB"}
        return out | ({} if self.threads is None else {"threads": int(self.threads)})

    def raised(self) -> int | None:
        """Twice the memory limit, at most the ceiling (docker: below the container's memory); None at it."""
        if self.memory_mib is None or self.ceiling_mib is None or self.memory_mib >= self.ceiling_mib:
            return None
        return min(self.memory_mib * 2, self.ceiling_mib)


NO_LIMITS = Limits()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(at: datetime) -> int:
    """A time as a TIMESTAMPTZ column of an Arrow batch holds it: microseconds since the epoch; a naive one is
    UTC, as the connection's TimeZone reads it."""
    aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MICROSECOND


def unnest_columns(rows: Sequence[tuple[object, ...]]) -> list[list[object]]:
    """Rows (at least one) as the columns an `unnest($1), unnest($2) …` statement takes."""
    return [list(column) for column in zip(*rows, strict=True)]


def connect(path: Path, file: DuckFile, limits: Limits = NO_LIMITS) -> duckdb.DuckDBPyConnection:
    """A read-write connection in UTC, within `limits` from the open on (a WAL's replay too); the folder is made if
    missing. Raises the sinks errors."""
    make_folder(path, file)
    try:
        db = duckdb.connect(str(path), config=limits.config())
    except duckdb.Error as exc:  # a WAL DuckDB fails to replay raises its base Error (duckdb 2.0)
        raise replay_error(exc, path, file, limits) from exc
    try:
        db.execute("SET TimeZone = 'UTC'")
        for statement in file.settings:
            db.execute(statement)
    except duckdb.Error as exc:
        db.close()
        raise error(exc, path, file) from exc
    return db


def open_checked(
    path: Path,
    file: DuckFile,
    setup: Callable[[duckdb.DuckDBPyConnection, Path], object],
    limits: Limits = NO_LIMITS,
) -> duckdb.DuckDBPyConnection:
    """`connect`, `check_integrity` (before anything is written to a damaged file), then `setup` (its schema)."""
    db = connect(path, file, limits)
    try:
        check_integrity(db, path, file)
        setup(db, path)
    except duckdb.Error as exc:
        db.close()
        raise error(exc, path, file) from exc
    except BaseException:
        db.close()
        raise
    return db


# DuckDB 2.0 invalidates the database when the checkpoint at a commit runs out of memory: "Transaction COMMIT
# succeeded and is durable, but the autocheckpoint failed" (the commit is in the WAL) or "Failed to create
# checkpoint because of error" (a commit written by the checkpoint itself: lost); and when a commit that ran out
# cannot be rolled back either, "Failed to rollback transaction" (a reader, such as a briefing, holding the
# memory meanwhile: not committed). Each names the block or data it could not pin or allocate.
_INVALIDATED = ("autocheckpoint failed", "Failed to create checkpoint", "Failed to rollback transaction")
_OUT_OF_MEMORY = (
    "failed to pin block",
    "could not allocate block",
    "failed to allocate data",
    "failed to reserve",
)


def out_of_memory(exc: duckdb.Error) -> str | None:
    """What DuckDB could not pin or allocate when `exc` is its running out of memory (a statement, or a commit,
    "Failed to commit: failed to pin block …"); None for any other error."""
    text = str(exc)
    found = [at for at in (text.find(words) for words in _OUT_OF_MEMORY) if at >= 0]
    if found:
        return text[min(found) :].splitlines()[0]
    return text.splitlines()[0] if isinstance(exc, duckdb.OutOfMemoryException) and text else None


def checkpoint_out_of_memory(exc: duckdb.Error) -> str | None:
    """What DuckDB could not pin or allocate when a commit (its checkpoint, or its rollback) ran out of memory,
    which invalidates the database (it must be reopened); None for any other error."""
    return out_of_memory(exc) if any(words in str(exc) for words in _INVALIDATED) else None


def commit_was_durable(exc: duckdb.Error) -> bool:
    """The commit reached the WAL before its checkpoint failed: it is kept, and must not be written again."""
    return "COMMIT succeeded and is durable" in str(exc)


def make_folder(path: Path, file: DuckFile) -> None:
    """The folder of `path`, made if missing; StateLocationError when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateLocationError(
            f"cannot make the folder of the {file.what} {path}: {exc.strerror or exc}. "
            "Check the path in the settings and that this user may write there."
        ) from exc


def error(exc: duckdb.Error, path: Path, file: DuckFile) -> DuckFileError:
    """The sinks error a DuckDB error on `path` means: held by another process, a folder problem, or damage."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "Could not set lock" in text:
        return StateLockedError(f"cannot open the {file.what} {path}: {text}. {file.if_locked}")
    if isinstance(exc, duckdb.OutOfMemoryException):
        # A scan holds a vector (2 048 rows) of a column's strings at once: large notes, not a damaged file.
        return StateMemoryError(
            f"cannot read the {file.what} {path} within its memory ({text}); {file.if_out_of_memory}"
        )
    if isinstance(exc, duckdb.IOException) and any(reason in text for reason in _LOCATION):
        return StateLocationError(
            f"cannot use the {file.what} {path}: {text}. Check the path in the settings, that its folder exists "
            "and that this user may write there."
        )
    return StateUnreadableError(
        f"the {file.what} {path} is damaged or not a DuckDB file ({text}); {file.if_damaged}"
    )


def replay_error(exc: duckdb.Error, path: Path, file: DuckFile, limits: Limits) -> DuckFileError:
    """The sinks error of a failed open: a WAL that did not replay within the memory limit (DuckDB raises it as an
    OutOfMemoryException, or as a TransactionException "Failed to commit: could not allocate block") is a
    StateMemoryError, never damage; anything else as `error` says."""
    reason = out_of_memory(exc)
    if reason is None:
        return error(exc, path, file)
    within = "DuckDB's default memory" if limits.memory_mib is None else f"{limits.memory_mib} MiB"
    return StateMemoryError(
        f"cannot replay the WAL of the {file.what} {path} within {within} ({reason}); {file.if_out_of_memory}"
    )


def checkpoint_error(exc: duckdb.Error, path: Path, file: DuckFile) -> StateLocationError:
    """The sinks error of a checkpoint that failed not for memory: DuckDB could not write the file (a full disk,
    a file size limit), which is kept as its last commit left it."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return StateLocationError(
        f"cannot checkpoint the {file.what} {path}: {text}. Free space on its disk (or lift the limit named) and "
        "restart the worker; the file is kept"
    )


def checkpoint(db: duckdb.DuckDBPyConnection, path: Path, file: DuckFile) -> None:
    """Write the WAL into the file now (a clean stop), or raise the DuckFileError that says why not: a close alone
    checkpoints too, but keeps its failure to itself (the WAL stays, replayed at the next open)."""
    try:
        db.execute("CHECKPOINT")
    except duckdb.Error as exc:
        if (reason := out_of_memory(exc)) is not None:
            raise StateMemoryError(
                f"cannot checkpoint the {file.what} {path} within its memory ({reason}); {file.if_out_of_memory}"
            ) from exc
        raise checkpoint_error(exc, path, file) from exc


def check_integrity(db: duckdb.DuckDBPyConnection, path: Path, file: DuckFile) -> None:
    """Raise StateUnreadableError unless every block of the file is there and reads back (cheap enough to run
    at open, and callable while running: a readiness check)."""
    # DuckDB opens a truncated file and answers counts from its metadata; only reading a block checks it (and
    # its checksum). So: the file's size against the blocks DuckDB says it has, then every column of every table.
    try:
        _check_size(db, path, file)
        for table in _tables(db):
            # hash() of every column: DuckDB cannot answer it from statistics, so it reads every block.
            db.execute(f'SELECT max(hash(COLUMNS(*))) FROM "{table}"').fetchall()
    except duckdb.Error as exc:
        if unusable(exc) or isinstance(exc, duckdb.InterruptException):
            # Closed, invalidated or interrupted under the check (the state reopened after a failed checkpoint,
            # or replaced meanwhile): no word on the file.
            raise
        raise error(exc, path, file) from exc


# The check a step at a time (`integrity_steps`): each step reads this many rows of a table, or a CHECK_STEPS-th
# of it when that is more (a table of millions of small rows): at 4 096 notes ~40-80 MiB of blocks at 100k notes.
CHECK_ROWS = 4096
CHECK_STEPS = 32


def integrity_steps(db: duckdb.DuckDBPyConnection, path: Path, file: DuckFile) -> Iterator[None]:
    """`check_integrity` in steps of a few thousand rows, yielding between them (the caller sheds DuckDB's cache
    there: the whole check fills it to its limit); a write between steps is checked at the next check."""
    try:
        _check_size(db, path, file)
        for table in _tables(db):
            row = db.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
            rows = -1 if row is None or row[0] is None else int(row[0])
            step = max(CHECK_ROWS, -(-(rows + 1) // CHECK_STEPS))
            for low in range(0, rows + 1, step):
                # A rowid range reads only the row groups it spans, every block of them.
                db.execute(
                    f'SELECT max(hash(COLUMNS(*))) FROM "{table}" WHERE rowid BETWEEN ? AND ?',
                    [low, low + step - 1],
                ).fetchall()
                yield
    except duckdb.Error as exc:
        if unusable(exc) or isinstance(exc, duckdb.InterruptException):
            raise
        raise error(exc, path, file) from exc


def locked_steps(steps: Iterator[None], lock: AbstractContextManager[object]) -> Iterator[None]:
    """Each of `steps` run holding `lock`, released between them (where this yields)."""
    while True:
        with lock:
            if next(steps, True):
                return
        yield


def _tables(db: duckdb.DuckDBPyConnection) -> list[str]:
    rows = db.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() ORDER BY 1"
    ).fetchall()
    return [table for (table,) in rows]


def unusable(exc: duckdb.Error) -> bool:
    """The connection can run nothing more and must be reopened: closed ("Connection already closed!"), or its
    database invalidated by a failed checkpoint or rollback (a FatalException, or "has been invalidated")."""
    return isinstance(
        exc, (duckdb.FatalException, duckdb.ConnectionException)
    ) or "has been invalidated" in str(exc)


def _check_size(db: duckdb.DuckDBPyConnection, path: Path, file: DuckFile) -> None:
    row = db.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
    if row is None or not path.is_file():  # an in-memory database has no file to compare
        return
    # The blocks in use, not total_blocks: DuckDB cuts free blocks off the end of the file at a checkpoint
    # but still counts them, so a healthy file looked truncated and was set aside. A cut that only takes
    # free blocks and some in use passes here and fails the read of every block below.
    expected = _HEADER_BYTES + int(row[0]) * int(row[1])
    size = os.stat(path).st_size
    if size < expected:
        raise StateUnreadableError(
            f"the {file.what} {path} is shorter than its blocks ({size} of {expected} bytes: truncated, as after "
            f"a disk fault); {file.if_damaged}"
        )


@contextmanager
def transaction(db: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One DuckDB transaction: committed when the block returns, rolled back when it raises."""
    db.begin()
    try:
        yield
    except BaseException:
        db.rollback()
        raise
    db.commit()


def set_aside(path: Path, now: datetime, reason: str) -> Path | None:
    """Rename a DuckDB file and its WAL to `<name>.<reason>-<UTC stamp>` (never deleted); None if absent."""
    wal = path.with_name(path.name + ".wal")
    if not path.exists() and not wal.exists():
        return None
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.{reason}-{stamp}")
    if path.exists():
        path.rename(target)
    if wal.exists():
        wal.rename(target.with_name(target.name + ".wal"))
    return target
