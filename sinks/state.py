"""The worker's DuckDB state: a materialised view of the documents and briefings topics."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from processors.models import Briefing, Document, Rejection, WindowBounds
from sinks.errors import StateLockedError, StateUnreadableError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS doc_seq;
CREATE TABLE IF NOT EXISTS documents (
    axis VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    seq BIGINT NOT NULL,
    event_time TIMESTAMPTZ NOT NULL,
    kind VARCHAR NOT NULL,
    current BOOLEAN NOT NULL,
    doc_json VARCHAR NOT NULL,
    PRIMARY KEY (axis, path, sha256)
);
CREATE TABLE IF NOT EXISTS deletions (
    axis VARCHAR NOT NULL, path VARCHAR NOT NULL, deleted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (axis, path)
);
CREATE TABLE IF NOT EXISTS rejected (
    path VARCHAR NOT NULL, sha256 VARCHAR NOT NULL, reason VARCHAR NOT NULL, seen_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (path, sha256)
);
CREATE TABLE IF NOT EXISTS emissions (
    axis VARCHAR NOT NULL, window_end TIMESTAMPTZ NOT NULL, trigger VARCHAR NOT NULL,
    basename VARCHAR NOT NULL, emitted_at TIMESTAMPTZ NOT NULL, briefing_json VARCHAR NOT NULL,
    PRIMARY KEY (axis, window_end, trigger)
);
CREATE TABLE IF NOT EXISTS applied (
    topic VARCHAR NOT NULL, part INTEGER NOT NULL, last_offset BIGINT NOT NULL,
    PRIMARY KEY (topic, part)
);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS raw_offset BIGINT;
ALTER TABLE deletions ADD COLUMN IF NOT EXISTS raw_offset BIGINT;
-- The recorded Markdown and when the briefing reached its topic (files and topic are re-done from the record).
ALTER TABLE emissions ADD COLUMN IF NOT EXISTS markdown VARCHAR;
ALTER TABLE emissions ADD COLUMN IF NOT EXISTS delivered_at TIMESTAMPTZ;
"""


@dataclass(frozen=True)
class Position:
    """Where a record sits in Kafka: the state remembers the last one applied per (topic, partition)."""

    topic: str
    partition: int
    offset: int


def _newer(offset: int | None, than: int | None) -> bool:
    """Version order of one path by raw offset; an unknown offset (a record from before 0.2) is arrival order."""
    return offset is None or than is None or offset > than


@dataclass(frozen=True)
class EmissionRecord:
    """One recorded briefing, byte for byte: the source of truth for its files and its topic message."""

    basename: str
    briefing_json: str
    markdown: str | None  # None: recorded without it (before it was kept); such rows count as delivered
    delivered_at: datetime | None  # None until the briefing topic acknowledged it

    @property
    def delivered(self) -> bool:
        return self.delivered_at is not None or self.markdown is None


class StateStore:
    """Idempotent writes: a record at or below the last applied offset of its partition changes nothing."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = duckdb.connect(str(path))
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise StateUnreadableError(f"cannot open state file {path}: {exc}") from exc
            raise StateLockedError(
                f"cannot open state file {path}: {exc}. Only the worker opens it; ask the worker over "
                "HTTP (predigest status/flush) or stop the other process."
            ) from exc
        except duckdb.Error as exc:  # a WAL DuckDB fails to replay raises its base Error (duckdb 2.0)
            raise StateUnreadableError(f"cannot open state file {path}: {exc}") from exc
        try:
            self._db.execute("SET TimeZone = 'UTC'")
            self._db.execute(_SCHEMA)
            # DDL left in the WAL is what DuckDB has failed to replay after a crash (duckdb#19712, #22044).
            self._db.execute("CHECKPOINT")
        except duckdb.Error as exc:
            self._db.close()
            raise StateUnreadableError(f"state file {path} does not take the schema: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.begin()
        try:
            yield
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()

    def applied_offset(self, topic: str, partition: int) -> int | None:
        """The offset of the last record of (topic, partition) this state holds; None when none."""
        row = self._db.execute(
            "SELECT last_offset FROM applied WHERE topic=? AND part=?", [topic, partition]
        ).fetchone()
        return int(row[0]) if row else None

    def applied_offsets(self) -> dict[tuple[str, int], int]:
        rows = self._db.execute("SELECT topic, part, last_offset FROM applied").fetchall()
        return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}

    def _seen(self, position: Position | None) -> bool:
        if position is None:
            return False
        last = self.applied_offset(position.topic, position.partition)
        return last is not None and position.offset <= last

    def _advance(self, position: Position | None) -> None:
        if position is not None:
            self._db.execute(
                "INSERT OR REPLACE INTO applied VALUES (?, ?, ?)",
                [position.topic, position.partition, position.offset],
            )

    def mark_applied(self, position: Position) -> None:
        """Remember a record that writes nothing (an event for no axis), so a replay starts after it."""
        with self._transaction():
            if not self._seen(position):
                self._advance(position)

    def put_document(
        self, axis: str, doc: Document, *, raw_offset: int | None, position: Position | None = None
    ) -> bool:
        """Store one version of a document; True if it became current. The highest raw offset is current."""
        with self._transaction():
            if self._seen(position):
                return False
            row = self._db.execute(
                "SELECT raw_offset FROM documents WHERE axis=? AND path=? AND sha256=?",
                [axis, doc.path, doc.sha256],
            ).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, nextval('doc_seq'), ?, ?, false, ?, ?)",
                    [axis, doc.path, doc.sha256, doc.event_time, doc.kind, doc.model_dump_json(), raw_offset],
                )
            elif raw_offset is not None and (row[0] is None or raw_offset > row[0]):
                # The same bytes again, later: a file restored to an earlier version is current again.
                self._db.execute(
                    "UPDATE documents SET raw_offset=? WHERE axis=? AND path=? AND sha256=?",
                    [raw_offset, axis, doc.path, doc.sha256],
                )
            else:
                self._advance(position)
                return False  # a replay of a version already held
            current = self._refresh_current(axis, doc.path) == doc.sha256
            deletion = self._db.execute(
                "SELECT raw_offset FROM deletions WHERE axis=? AND path=?", [axis, doc.path]
            ).fetchone()
            if current and deletion is not None:
                if _newer(raw_offset, deletion[0]):
                    self._db.execute("DELETE FROM deletions WHERE axis=? AND path=?", [axis, doc.path])
                else:
                    current = False  # deleted after this version was written
            self._advance(position)
            return current

    def _refresh_current(self, axis: str, path: str) -> str | None:
        """Mark the path's newest version current (highest raw offset, then arrival); its sha256."""
        row = self._db.execute(
            "SELECT sha256 FROM documents WHERE axis=? AND path=? "
            "ORDER BY raw_offset DESC NULLS LAST, seq DESC LIMIT 1",
            [axis, path],
        ).fetchone()
        if row is None:
            return None
        self._db.execute(
            "UPDATE documents SET current = (sha256 = ?) WHERE axis=? AND path=?", [row[0], axis, path]
        )
        return str(row[0])

    def delete_path(
        self,
        axis: str,
        path: str,
        when: datetime,
        *,
        raw_offset: int | None,
        position: Position | None = None,
    ) -> bool:
        """Record that the path was deleted; True unless the axis never held it or holds a newer version."""
        with self._transaction():
            if self._seen(position):
                return False
            held, newest = self._db.execute(
                "SELECT count(*), max(raw_offset) FROM documents WHERE axis=? AND path=?", [axis, path]
            ).fetchone() or (0, None)
            previous = self._db.execute(
                "SELECT raw_offset FROM deletions WHERE axis=? AND path=?", [axis, path]
            ).fetchone()
            # Deletions go to every axis; a newer version (a replay can bring the deletion late) wins.
            applies = (
                held > 0
                and _newer(raw_offset, newest)
                and (previous is None or _newer(raw_offset, previous[0]))
            )
            if applies:
                self._db.execute(
                    "INSERT OR REPLACE INTO deletions VALUES (?, ?, ?, ?)", [axis, path, when, raw_offset]
                )
            self._advance(position)
            return applies

    def put_rejection(
        self, rejection: Rejection, sha256: str, seen_at: datetime, position: Position | None = None
    ) -> None:
        with self._transaction():
            if self._seen(position):
                return
            self._db.execute(
                "INSERT OR IGNORE INTO rejected VALUES (?, ?, ?, ?)",
                [rejection.path, sha256, rejection.reason, seen_at],
            )
            self._advance(position)

    def _docs(self, where: str, params: Sequence[object]) -> list[Document]:
        rows = self._db.execute(
            "SELECT doc_json FROM documents d WHERE " + where + " ORDER BY event_time, path", list(params)
        ).fetchall()
        return [Document.model_validate_json(r[0]) for r in rows]

    _NOT_DELETED = "NOT EXISTS (SELECT 1 FROM deletions x WHERE x.axis=d.axis AND x.path=d.path)"

    def window_documents(self, axis: str, window: WindowBounds) -> list[Document]:
        """Current, undeleted versions of the axis's documents whose event time is in the window."""
        return self._docs(
            f"axis=? AND current AND kind <> 'living' AND event_time >= ? AND event_time < ? AND {self._NOT_DELETED}",
            [axis, window.start, window.end],
        )

    def superseded_documents(self, axis: str, window: WindowBounds) -> list[Document]:
        return self._docs(
            "axis=? AND NOT current AND kind <> 'living' AND event_time >= ? AND event_time < ?",
            [axis, window.start, window.end],
        )

    def latest_baseline(self, axis: str, before: datetime, since: datetime) -> Document | None:
        """The newest earlier briefing of `axis` dated in [since, before): yesterday's, for the baseline."""
        docs = self._docs(
            f"axis=? AND current AND kind='baseline' AND event_time >= ? AND event_time < ? AND {self._NOT_DELETED}",
            [axis, since, before],
        )
        own = [d for d in docs if d.baseline_axis == axis]
        return own[-1] if own else None

    def living_document(self, axis: str) -> Document | None:
        docs = self._docs(f"axis=? AND current AND kind='living' AND {self._NOT_DELETED}", [axis])
        return docs[-1] if docs else None

    def rejections(self, window: WindowBounds) -> list[Rejection]:
        rows = self._db.execute(
            "SELECT path, reason FROM rejected WHERE seen_at >= ? AND seen_at < ? ORDER BY path",
            [window.start, window.end],
        ).fetchall()
        return [Rejection(path=r[0], reason=r[1]) for r in rows]

    def document_count(self, axis: str | None = None) -> int:
        q = "SELECT count(*) FROM documents WHERE current"
        row = self._db.execute(q + (" AND axis=?" if axis else ""), [axis] if axis else []).fetchone()
        return int(row[0]) if row else 0

    def emission(self, axis: str, window_end: datetime, trigger: str) -> Briefing | None:
        row = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? AND window_end=? AND trigger=?",
            [axis, window_end, trigger],
        ).fetchone()
        return Briefing.model_validate_json(row[0]) if row else None

    def record_emission(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str | None = None,
        emitted_at: datetime | None = None,
    ) -> bool:
        """Record a briefing before anything is written or sent; False if (axis, end, trigger) already was."""
        inserted = self._db.execute(
            "INSERT OR IGNORE INTO emissions "
            "(axis, window_end, trigger, basename, emitted_at, briefing_json, markdown) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING axis",
            [
                briefing.axis,
                briefing.window.end,
                briefing.trigger,
                basename,
                emitted_at or datetime.now(UTC),
                briefing.model_dump_json(by_alias=True),
                markdown,
            ],
        ).fetchall()
        return bool(inserted)

    def emission_record(self, axis: str, window_end: datetime, trigger: str) -> EmissionRecord | None:
        """The recorded bytes of an emission, or None if it was never recorded."""
        row = self._db.execute(
            "SELECT basename, briefing_json, markdown, delivered_at FROM emissions "
            "WHERE axis=? AND window_end=? AND trigger=?",
            [axis, window_end, trigger],
        ).fetchone()
        if row is None:
            return None
        return EmissionRecord(basename=row[0], briefing_json=row[1], markdown=row[2], delivered_at=row[3])

    def mark_delivered(self, axis: str, window_end: datetime, trigger: str, when: datetime) -> None:
        """Note that the briefing topic acknowledged the recorded briefing."""
        self._db.execute(
            "UPDATE emissions SET delivered_at=? WHERE axis=? AND window_end=? AND trigger=? "
            "AND delivered_at IS NULL",
            [when, axis, window_end, trigger],
        )

    def earlier_briefings(self, axis: str, before: datetime) -> list[Briefing]:
        rows = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? AND window_end < ? ORDER BY window_end",
            [axis, before],
        ).fetchall()
        return [Briefing.model_validate_json(r[0]) for r in rows]

    def latest_emission(self, axis: str) -> Briefing | None:
        row = self._db.execute(
            "SELECT briefing_json FROM emissions WHERE axis=? ORDER BY emitted_at DESC LIMIT 1", [axis]
        ).fetchone()
        return Briefing.model_validate_json(row[0]) if row else None

    def last_close_end(self, axis: str) -> datetime | None:
        row = self._db.execute(
            "SELECT max(window_end) FROM emissions WHERE axis=? AND trigger='close'", [axis]
        ).fetchone()
        value = row[0] if row else None
        return value if isinstance(value, datetime) else None

    def window_document_count(self, axis: str, window: WindowBounds) -> int:
        """How many documents `window_documents` would return, without decoding them."""
        row = self._db.execute(
            "SELECT count(*) FROM documents d WHERE axis=? AND current AND kind <> 'living' "
            f"AND event_time >= ? AND event_time < ? AND {self._NOT_DELETED}",
            [axis, window.start, window.end],
        ).fetchone()
        return int(row[0]) if row else 0

    def last_emitted_at(self, axis: str) -> datetime | None:
        """When the axis's latest briefing (any trigger) was recorded."""
        row = self._db.execute("SELECT max(emitted_at) FROM emissions WHERE axis=?", [axis]).fetchone()
        value = row[0] if row else None
        return value if isinstance(value, datetime) else None

    def restore_emission(self, briefing: Briefing, basename: str, position: Position | None = None) -> bool:
        """Record an emission read back from `predigest.briefings`; True if this state did not hold it."""
        with self._transaction():
            if self._seen(position):
                return False
            known = self.emission(briefing.axis, briefing.window.end, briefing.trigger) is not None
            if not known:
                self._db.execute(
                    "INSERT INTO emissions (axis, window_end, trigger, basename, emitted_at, briefing_json) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        briefing.axis,
                        briefing.window.end,
                        briefing.trigger,
                        basename,
                        briefing.generated_at,
                        briefing.model_dump_json(by_alias=True),
                    ],
                )
            self._advance(position)
            return not known

    def axis_summary(self, axis: str) -> dict[str, int]:
        """Counts for `predigest status`: current documents, superseded versions and deleted paths."""
        row = self._db.execute(
            "SELECT count(*) FILTER (WHERE current), count(*) FILTER (WHERE NOT current) FROM documents "
            "WHERE axis=?",
            [axis],
        ).fetchone()
        deleted = self._db.execute("SELECT count(*) FROM deletions WHERE axis=?", [axis]).fetchone()
        return {
            "documents": int(row[0]) if row else 0,
            "superseded": int(row[1]) if row else 0,
            "deleted": int(deleted[0]) if deleted else 0,
        }
