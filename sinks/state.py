"""The worker's DuckDB state: a materialised view of the documents and briefings topics."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from processors.models import Briefing, Document, DocumentSummary, Rejection, WindowBounds
from processors.versions import BatchPlan, Deletion, Key, PathVersions, Version
from processors.wire import (
    DocumentRecord,
    EventHeader,
    StoredDocument,
    load_document,
    load_summary,
    store_document,
)
from sinks import duck, schema

log = logging.getLogger(__name__)

STATE = duck.DuckFile(
    "state file",
    if_locked="Only the worker opens it; ask the worker over HTTP (predigest status/flush) or stop the other process.",
    if_damaged="the worker sets it aside and rebuilds it from Kafka, as `predigest rebuild` does while it is stopped",
)


@dataclass(frozen=True)
class Position:
    """Where a record sits in Kafka: the state remembers the last one applied per (topic, partition)."""

    topic: str
    partition: int
    offset: int


_CONTENT = "JOIN contents c ON c.path = d.path AND c.sha256 = d.sha256"


@dataclass(frozen=True)
class Loader:
    """`load(paths)` for a briefing's second phase, and `close()` once it is done."""

    load: Callable[[Sequence[str]], list[Document]]
    close: Callable[[], None]


def _write_plan(db: duckdb.DuckDBPyConnection, plan: BatchPlan) -> None:
    """The planned rows, a handful of set-based statements whatever the batch size."""
    current = {k: plan.current_of(k) for k in plan.touched}
    if plan.raised:
        db.execute(
            "UPDATE documents SET raw_offset = m.raw_offset FROM (SELECT unnest($1) AS axis, "
            "unnest($2) AS path, unnest($3) AS sha256, unnest($4) AS raw_offset) m "
            "WHERE documents.axis = m.axis AND documents.path = m.path AND documents.sha256 = m.sha256",
            _columns([(*k, offset) for k, offset in plan.raised.items()]),
        )
    old = [k for k in plan.touched if k in plan.stored_paths]
    if old:
        db.execute(
            "UPDATE documents SET current = (documents.sha256 = c.sha256) FROM (SELECT unnest($1) AS axis, "
            "unnest($2) AS path, unnest($3) AS sha256) c WHERE documents.axis = c.axis AND documents.path = c.path",
            _columns([(*k, current[k]) for k in old]),
        )
    if plan.new_versions:
        rows = []
        contents: dict[tuple[str, str], StoredDocument] = {}
        for (axis, path, sha), (h, stored) in plan.new_versions.items():
            v = plan.paths[(axis, path)].versions[sha]
            current_now = current[(axis, path)] == sha
            rows.append((axis, path, sha, v.seq, h.event_time, h.kind, current_now, v.raw_offset))
            contents.setdefault((path, sha), stored)
        db.execute(
            "INSERT INTO documents (axis, path, sha256, seq, event_time, kind, current, raw_offset) "
            "SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5::TIMESTAMPTZ[]), unnest($6), "
            "unnest($7), unnest($8)",
            _columns(rows),
        )
        db.execute(
            "INSERT OR IGNORE INTO contents SELECT unnest($1), unnest($2), unnest($3), unnest($4)",
            _columns([(*k, c.summary_json, c.body_json) for k, c in contents.items()]),
        )
    changed = plan.deletions_changed()
    if changed:
        db.execute(
            "DELETE FROM deletions USING (SELECT unnest($1) AS axis, unnest($2) AS path) k "
            "WHERE deletions.axis = k.axis AND deletions.path = k.path",
            _columns(list(changed)),
        )
        kept = [(*k, d.deleted_at, d.raw_offset) for k, d in changed.items() if d is not None]
        if kept:
            db.execute(
                "INSERT INTO deletions SELECT unnest($1), unnest($2), unnest($3::TIMESTAMPTZ[]), "
                "unnest($4::BIGINT[])",
                _columns(kept),
            )
    if plan.rejected:
        db.execute(
            "INSERT OR IGNORE INTO rejected SELECT unnest($1), unnest($2), unnest($3), "
            "unnest($4::TIMESTAMPTZ[])",
            _columns([(*k, *v) for k, v in plan.rejected.items()]),
        )


def _columns(rows: Sequence[tuple[object, ...]]) -> list[list[object]]:
    """Rows (at least one) as the columns an `unnest($1), unnest($2) …` statement takes."""
    return [list(column) for column in zip(*rows, strict=True)]


@dataclass(frozen=True)
class EmissionRecord:
    """One recorded briefing, byte for byte: the source of truth for its files and its topic message."""

    basename: str
    briefing_json: str
    markdown: str | None  # None: restored from the briefings topic, which carries the JSON only
    delivered_at: datetime | None  # None until the briefing topic acknowledged it

    @property
    def delivered(self) -> bool:
        return self.delivered_at is not None


class StateStore:
    """Idempotent writes: a record at or below the last applied offset of its partition changes nothing."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._db = duck.open_checked(path, STATE, schema.ensure)

    def check(self) -> None:
        """Raise StateUnreadableError unless every block of the file reads back (a readiness check can call it)."""
        duck.check_integrity(self._db, self._path, STATE)

    def close(self) -> None:
        self._db.close()

    def _transaction(self) -> AbstractContextManager[None]:
        return duck.transaction(self._db)

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
        header = EventHeader(
            type="document",
            path=doc.path,
            sha256=doc.sha256,
            seen_at=doc.event_time,
            axis=axis,
            raw_offset=raw_offset,
            kind=doc.kind,
            event_time=doc.event_time,
        )
        return self.apply_batch([(DocumentRecord(header, store_document(doc)), position)])[0]

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
        header = EventHeader(
            type="deletion", path=path, sha256="", seen_at=when, axis=axis, raw_offset=raw_offset
        )
        return self.apply_batch([(DocumentRecord(header), position)])[0]

    def apply_batch(self, items: Sequence[tuple[DocumentRecord, Position | None]]) -> list[bool]:
        """Apply documents records in one transaction, as if one by one; per record, whether a briefing sees it.

        A record at or below its partition's applied offset changes nothing. The outcome of each record is
        worked out in memory from the rows of the paths the batch touches, then written set-based.
        """
        with self._transaction():
            applied = self.applied_offsets()
            fresh: list[int] = []
            advance: dict[tuple[str, int], int] = {}
            for i, (_, pos) in enumerate(items):
                if pos is not None:
                    key = (pos.topic, pos.partition)
                    last = applied.get(key)
                    if last is not None and pos.offset <= last:
                        continue
                    applied[key] = advance[key] = pos.offset
                fresh.append(i)
            plan = BatchPlan(self._held(items, fresh), iter(self._seqs(items, fresh)).__next__)
            results = [False] * len(items)
            for i in fresh:
                results[i] = plan.apply(items[i][0])
            _write_plan(self._db, plan)
            for (topic, part), offset in advance.items():
                self._db.execute("INSERT OR REPLACE INTO applied VALUES (?, ?, ?)", [topic, part, offset])
        return results

    def _held(
        self, items: Sequence[tuple[DocumentRecord, Position | None]], fresh: list[int]
    ) -> dict[Key, PathVersions]:
        """What the state holds of the paths the fresh records touch: their versions and deletions."""
        keys = {
            (h.axis, h.path)
            for h in (items[i][0].header for i in fresh)
            if h.axis and h.type in ("document", "deletion")
        }
        held: dict[Key, PathVersions] = {}
        if not keys:
            return held
        touched = [[a for a, _ in keys], [p for _, p in keys]]
        rows = self._db.execute(
            "SELECT d.axis, d.path, d.sha256, d.raw_offset, d.seq FROM documents d "
            "JOIN (SELECT unnest($1) AS axis, unnest($2) AS path) k ON d.axis = k.axis AND d.path = k.path",
            touched,
        ).fetchall()
        for axis, path, sha, raw_offset, seq in rows:
            held.setdefault((axis, path), PathVersions()).versions[sha] = Version(raw_offset, seq)
        rows = self._db.execute(
            "SELECT x.axis, x.path, x.deleted_at, x.raw_offset FROM deletions x "
            "JOIN (SELECT unnest($1) AS axis, unnest($2) AS path) k ON x.axis = k.axis AND x.path = k.path",
            touched,
        ).fetchall()
        for axis, path, deleted_at, raw_offset in rows:
            held.setdefault((axis, path), PathVersions()).deletion = Deletion(deleted_at, raw_offset)
        return held

    def _seqs(self, items: Sequence[tuple[DocumentRecord, Position | None]], fresh: list[int]) -> list[int]:
        n = sum(1 for i in fresh if items[i][0].header.type == "document")
        if n == 0:
            return []
        rows = self._db.execute("SELECT nextval('doc_seq') FROM range(?)", [n]).fetchall()
        return sorted(int(r[0]) for r in rows)

    def _docs(
        self, where: str, params: Sequence[object], db: duckdb.DuckDBPyConnection | None = None
    ) -> list[Document]:
        rows = (
            (db or self._db)
            .execute(
                f"SELECT c.summary_json, c.body_json FROM documents d {_CONTENT} WHERE {where} "
                "ORDER BY d.event_time, d.path",
                list(params),
            )
            .fetchall()
        )
        out = []
        for summary_json, body_json in rows:
            try:
                out.append(load_document(StoredDocument(summary_json, body_json)))
            except ValueError as exc:
                # A damaged row must not stop every briefing of its axis: leave it out, loudly.
                log.error("a stored document cannot be read and is left out of the briefing: %s", exc)
        return out

    def _summaries(self, where: str, params: Sequence[object]) -> list[DocumentSummary]:
        rows = self._db.execute(
            f"SELECT c.summary_json FROM documents d {_CONTENT} WHERE {where} ORDER BY d.event_time, d.path",
            list(params),
        ).fetchall()
        return [load_summary(r[0]) for r in rows]

    _NOT_DELETED = "NOT EXISTS (SELECT 1 FROM deletions x WHERE x.axis=d.axis AND x.path=d.path)"
    _IN_WINDOW = (
        f"axis=? AND current AND kind <> 'living' AND event_time >= ? AND event_time < ? AND {_NOT_DELETED}"
    )
    _SUPERSEDED = "axis=? AND NOT current AND kind <> 'living' AND event_time >= ? AND event_time < ?"

    def window_documents(self, axis: str, window: WindowBounds) -> list[Document]:
        """Current, undeleted versions of the axis's documents whose event time is in the window."""
        return self._docs(self._IN_WINDOW, [axis, window.start, window.end])

    def window_summaries(self, axis: str, window: WindowBounds) -> list[DocumentSummary]:
        """The same documents as `window_documents`, without their text: what a briefing ranks."""
        return self._summaries(self._IN_WINDOW, [axis, window.start, window.end])

    def documents(self, axis: str, paths: Sequence[str]) -> list[Document]:
        """The current versions of these paths on the axis, whole (the few a briefing quotes)."""
        if not paths:
            return []
        return self._docs("d.axis=? AND d.current AND list_contains(?, d.path)", [axis, list(paths)])

    def loader(self, axis: str, versions: Mapping[str, str]) -> Loader:
        """Loads whole the given versions (path → sha256) of the axis's documents, from another thread.

        Its own connection (a DuckDB cursor, opened here) reads while this one goes on writing; asking for
        the versions the summaries came from keeps a briefing consistent with its window as it was read.
        """
        cursor = self._db.cursor()

        def load(paths: Sequence[str]) -> list[Document]:
            wanted = [p for p in paths if p in versions]
            if not wanted:
                return []
            return self._docs(
                "d.axis=? AND list_contains(?, d.path || '@' || d.sha256)",
                [axis, [f"{p}@{versions[p]}" for p in wanted]],
                cursor,
            )

        return Loader(load, cursor.close)

    def superseded_documents(self, axis: str, window: WindowBounds) -> list[Document]:
        return self._docs(self._SUPERSEDED, [axis, window.start, window.end])

    def superseded_summaries(self, axis: str, window: WindowBounds) -> list[DocumentSummary]:
        return self._summaries(self._SUPERSEDED, [axis, window.start, window.end])

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

    def record_emission(self, briefing: Briefing, basename: str, markdown: str, emitted_at: datetime) -> bool:
        """Record a briefing before anything is written or sent; False if (axis, end, trigger) already was."""
        return self._insert_emission(briefing, basename, markdown, emitted_at, delivered_at=None)

    def _insert_emission(
        self,
        briefing: Briefing,
        basename: str,
        markdown: str | None,
        emitted_at: datetime,
        delivered_at: datetime | None,
    ) -> bool:
        inserted = self._db.execute(
            "INSERT OR IGNORE INTO emissions VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING axis",
            [
                briefing.axis,
                briefing.window.end,
                briefing.trigger,
                basename,
                emitted_at,
                briefing.model_dump_json(by_alias=True),
                markdown,
                delivered_at,
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
            # It came from the briefings topic: delivered; its Markdown is rendered from the JSON when needed.
            when = briefing.generated_at
            inserted = self._insert_emission(briefing, basename, None, emitted_at=when, delivered_at=when)
            self._advance(position)
            return inserted

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
