"""Reads of the worker's state from another thread: what `/status`, `/readyz` and the briefing browser read.

DuckDB connections are not shared between threads; a cursor is a connection of its own to the same database,
reading a consistent snapshot (MVCC) while the worker's connection goes on writing. The state's `close()`
closes its cursors too, so a reader of a replaced state fails with a DuckDB error instead of reading on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType

import duckdb

from processors.models import Document, WindowBounds
from sinks import duck
from sinks.counts import Counts
from sinks.documents import Documents
from sinks.emissions import Emissions
from sinks.rejections import LATEST, Refusal, path_refusal
from sinks.summary_rows import SUMMARY_COLUMNS, summary_joins, with_rows
from sinks.unreadable import Unreadable, whole_document
from sinks.window_reads import StoredWindow


@dataclass(frozen=True)
class NoteVersion:
    """One stored version of a path: its hash, its time, the axes that hold it, whether it is current."""

    sha256: str
    event_time: datetime
    axes: tuple[str, ...]
    current: bool


@dataclass(frozen=True)
class StoredNote:
    """A note as the state holds it: one version whole, every version listed, newest first."""

    document: Document | None  # None when its stored text cannot be read back (`unreadable` says why)
    sha256: str
    versions: list[NoteVersion]
    deleted: bool  # every axis that held it saw it deleted
    unreadable: str = ""
    # Why its file is refused since its current version was stored (briefings list it among the rejected).
    refused: str = ""


class StateReader:
    """The state's reads on a cursor of their own; use it from one thread at a time, then close it."""

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        path: Path,
        file: duck.DuckFile,
        track: Callable[[duckdb.DuckDBPyConnection], duckdb.DuckDBPyConnection] = lambda cursor: cursor,
        unreadable: Unreadable | None = None,  # where `note` reports a stored note it cannot read
    ) -> None:
        self._unreadable = unreadable or Unreadable(reader="browse")
        self._db = cursor
        self._track = track  # the state's, so that it can stop the reads of a window's cursor too
        self._path = path
        self._file = file
        self.docs = Documents(cursor)
        self.emissions = Emissions(cursor)
        self.counts = Counts(cursor)

    def check(self) -> None:
        """Raise StateUnreadableError unless the file is whole and every block DuckDB reads for it checks out."""
        duck.check_integrity(self._db, self._path, self._file)

    def applied_offset(self, topic: str, partition: int) -> int | None:
        row = self._db.execute(
            "SELECT last_offset FROM applied WHERE topic=? AND part=?", [topic, partition]
        ).fetchone()
        return int(row[0]) if row else None

    def window(self, axis: str, window: WindowBounds) -> StoredWindow:
        """The axis window's sources as a briefing reads them (no baseline), on a cursor of their own."""
        return StoredWindow(self._track(self._db.cursor()), axis, window)

    def note(self, path: str, sha256: str | None = None) -> StoredNote | None:
        """The current version of a path (or the one asked for), with its versions; None if never stored."""
        rows = self._db.execute(
            "SELECT sha256, min(event_time), list(DISTINCT axis ORDER BY axis), bool_or(current), max(seq) "
            "FROM documents WHERE path=? GROUP BY sha256 ORDER BY bool_or(current) DESC, max(seq) DESC",
            [path],
        ).fetchall()
        versions = [NoteVersion(r[0], r[1], tuple(r[2]), bool(r[3])) for r in rows]
        chosen = next((v for v in versions if v.sha256 == sha256), None) if sha256 else None
        chosen = chosen or (versions[0] if versions else None)
        if chosen is None:
            return None
        row = self._db.execute(
            f"SELECT d.path, '', {SUMMARY_COLUMNS} FROM (SELECT $1 AS path, $2 AS sha256) d {summary_joins('[$1]')}",
            [path, chosen.sha256],
        ).fetchone()
        assert row is not None  # one row, its stored parts or NULLs
        summary = with_rows(self._db, [row])[0][2]
        axes = {a for v in versions for a in v.axes}
        gone = self._db.execute("SELECT count(DISTINCT axis) FROM deletions WHERE path=?", [path]).fetchone()
        deleted = bool(gone and gone[0] >= len(axes) > 0)
        refused = self._db.execute(
            f"SELECT reason FROM rejected r WHERE path=? AND axis <> '' AND {LATEST} "
            "ORDER BY raw_offset DESC NULLS LAST LIMIT 1",
            [path],
        ).fetchone()
        why = str(refused[0]) if refused else ""
        try:
            document = whole_document(summary, row[3])
        except ValueError as exc:
            listed = self._unreadable.report(path, ",".join(sorted(axes)), exc)
            return StoredNote(None, chosen.sha256, versions, deleted, listed.reason, why)
        return StoredNote(document, chosen.sha256, versions, deleted, refused=why)

    def refusal(self, path: str) -> Refusal | None:
        """Why the path's latest record refused its file, and when; None if it does not stand (or never came)."""
        return path_refusal(self._db, path)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StateReader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
