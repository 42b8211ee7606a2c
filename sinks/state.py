"""The worker's DuckDB state: a materialised view of the documents and control topics."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from processors.models import Briefing, Document, Rejection, WindowBounds
from sinks.errors import StateLockedError

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
-- The recorded Markdown and when the briefing reached its topic (files and topic are re-done from the record).
ALTER TABLE emissions ADD COLUMN IF NOT EXISTS markdown VARCHAR;
ALTER TABLE emissions ADD COLUMN IF NOT EXISTS delivered_at TIMESTAMPTZ;
"""


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
    """Idempotent writes keyed by (axis, path, sha256): a replayed record changes nothing."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = duckdb.connect(str(path))
        except duckdb.IOException as exc:
            raise StateLockedError(
                f"cannot open state file {path}: {exc}. Only the worker opens it; ask the worker over "
                "HTTP (predigest status/flush) or stop the other process."
            ) from exc
        self._db.execute("SET TimeZone = 'UTC'")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def put_document(self, axis: str, doc: Document) -> bool:
        """Store one version of a document; True if it was new. The newest version becomes current."""
        exists = self._db.execute(
            "SELECT current FROM documents WHERE axis=? AND path=? AND sha256=?", [axis, doc.path, doc.sha256]
        ).fetchone()
        if exists is not None:
            return False
        self._db.execute("BEGIN")
        self._db.execute("UPDATE documents SET current=false WHERE axis=? AND path=?", [axis, doc.path])
        self._db.execute(
            "INSERT INTO documents VALUES (?, ?, ?, nextval('doc_seq'), ?, ?, true, ?)",
            [axis, doc.path, doc.sha256, doc.event_time, doc.kind, doc.model_dump_json()],
        )
        self._db.execute("DELETE FROM deletions WHERE axis=? AND path=?", [axis, doc.path])
        self._db.execute("COMMIT")
        return True

    def delete_path(self, axis: str, path: str, when: datetime) -> None:
        self._db.execute("INSERT OR REPLACE INTO deletions VALUES (?, ?, ?)", [axis, path, when])

    def put_rejection(self, rejection: Rejection, sha256: str, seen_at: datetime) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO rejected VALUES (?, ?, ?, ?)",
            [rejection.path, sha256, rejection.reason, seen_at],
        )

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
