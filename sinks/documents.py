"""Documents in the state: records written through the version plan, and the reads a briefing makes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from processors.models import Document, DocumentSummary, Rejection, WindowBounds
from processors.reasons import REJECTION_CODES, RejectionCode
from processors.versions import BatchPlan, Deletion, Key, PathVersions, Version
from processors.wire import DocumentRecord, StoredDocument, load_document, load_summary

log = logging.getLogger(__name__)

_CONTENT = "JOIN contents c ON c.path = d.path AND c.sha256 = d.sha256"
NOT_DELETED = "NOT EXISTS (SELECT 1 FROM deletions x WHERE x.axis=d.axis AND x.path=d.path)"
# What a briefing of the window sees: the current, undeleted versions dated in it (living documents apart).
IN_WINDOW = (
    f"axis=? AND current AND kind <> 'living' AND event_time >= ? AND event_time < ? AND {NOT_DELETED}"
)
_SUPERSEDED = "axis=? AND NOT current AND kind <> 'living' AND event_time >= ? AND event_time < ?"
_TOUCHED = "JOIN (SELECT unnest($1) AS axis, unnest($2) AS path) k ON {t}.axis = k.axis AND {t}.path = k.path"


@dataclass(frozen=True)
class DocumentLoader:
    """`load(paths)` for a briefing's second phase, and `close()` once it is done."""

    load: Callable[[Sequence[str]], list[Document]]
    close: Callable[[], None]


class Documents:
    """The documents, contents, deletions and rejected tables; writes run in the caller's transaction."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def write(self, records: Sequence[DocumentRecord]) -> list[bool]:
        """Apply records as if one by one; per record, whether a briefing sees what it brought.

        Worked out in memory (processors.versions) from the rows of the paths they touch, then written with a
        handful of set-based statements whatever their number.
        """
        documents = sum(1 for r in records if r.header.type == "document")
        plan = BatchPlan(self._held(records), iter(self._seqs(documents)).__next__)
        outcomes = [plan.apply(r) for r in records]
        _write_plan(self._db, plan)
        return outcomes

    def _held(self, records: Sequence[DocumentRecord]) -> dict[Key, PathVersions]:
        """What the state holds of the paths the records touch: their versions and deletions."""
        keys = {
            (h.axis, h.path)
            for h in (r.header for r in records)
            if h.axis and h.type in ("document", "deletion")
        }
        held: dict[Key, PathVersions] = {}
        if not keys:
            return held
        touched = [[a for a, _ in keys], [p for _, p in keys]]
        rows = self._db.execute(
            f"SELECT d.axis, d.path, d.sha256, d.raw_offset, d.seq FROM documents d {_TOUCHED.format(t='d')}",
            touched,
        ).fetchall()
        for axis, path, sha, raw_offset, seq in rows:
            held.setdefault((axis, path), PathVersions()).versions[sha] = Version(raw_offset, seq)
        rows = self._db.execute(
            f"SELECT x.axis, x.path, x.deleted_at, x.raw_offset FROM deletions x {_TOUCHED.format(t='x')}",
            touched,
        ).fetchall()
        for axis, path, deleted_at, raw_offset in rows:
            held.setdefault((axis, path), PathVersions()).deletion = Deletion(deleted_at, raw_offset)
        return held

    def _seqs(self, n: int) -> list[int]:
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
        return whole_documents(rows)

    def _summaries(self, where: str, params: Sequence[object]) -> list[DocumentSummary]:
        rows = self._db.execute(
            f"SELECT c.summary_json FROM documents d {_CONTENT} WHERE {where} ORDER BY d.event_time, d.path",
            list(params),
        ).fetchall()
        return [load_summary(r[0]) for r in rows]

    def window_summaries(self, axis: str, window: WindowBounds) -> list[DocumentSummary]:
        """Current, undeleted versions of the axis's documents dated in the window, without their text."""
        return self._summaries(IN_WINDOW, [axis, window.start, window.end])

    def superseded_summaries(self, axis: str, window: WindowBounds) -> list[DocumentSummary]:
        """Versions of the window's documents that a newer one replaced."""
        return self._summaries(_SUPERSEDED, [axis, window.start, window.end])

    def documents(self, axis: str, paths: Sequence[str]) -> list[Document]:
        """The current versions of these paths on the axis, whole (the few a briefing quotes)."""
        if not paths:
            return []
        return self._docs("d.axis=? AND d.current AND list_contains(?, d.path)", [axis, list(paths)])

    def loader(self, axis: str, versions: Mapping[str, str]) -> DocumentLoader:
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

        return DocumentLoader(load, cursor.close)

    def latest_baseline(self, axis: str, before: datetime, since: datetime) -> Document | None:
        """The newest earlier briefing of `axis` dated in [since, before): yesterday's, for the baseline."""
        docs = self._docs(
            f"axis=? AND current AND kind='baseline' AND event_time >= ? AND event_time < ? AND {NOT_DELETED}",
            [axis, since, before],
        )
        own = [d for d in docs if d.baseline_axis == axis]
        return own[-1] if own else None

    def living_document(self, axis: str) -> Document | None:
        docs = self._docs(f"axis=? AND current AND kind='living' AND {NOT_DELETED}", [axis])
        return docs[-1] if docs else None

    def rejections(self, window: WindowBounds) -> list[Rejection]:
        """The files refused whose own time (else the time the worker saw them) falls in the window."""
        rows = self._db.execute(
            "SELECT path, reason, reason_code FROM rejected "
            "WHERE coalesce(event_time, seen_at) >= ? AND coalesce(event_time, seen_at) < ? ORDER BY path",
            [window.start, window.end],
        ).fetchall()
        return [Rejection(path=r[0], reason=r[1], reason_code=_code(r[2])) for r in rows]


def whole_documents(rows: Sequence[tuple[str, str]]) -> list[Document]:
    """Documents from their stored (summary, body) rows; a damaged one is left out, loudly."""
    out = []
    for summary_json, body_json in rows:
        try:
            out.append(load_document(StoredDocument(summary_json, body_json)))
        except ValueError as exc:
            # A damaged row must not stop every briefing of its axis: leave it out, loudly.
            log.error("a stored document cannot be read and is left out of the briefing: %s", exc)
    return out


def _code(value: str | None) -> RejectionCode | None:
    """A stored code this version knows; None for another version's (the message still says why)."""
    return next((c for c in REJECTION_CODES if c == value), None)


def _write_plan(db: duckdb.DuckDBPyConnection, plan: BatchPlan) -> None:
    """The planned rows: raised raw offsets, `current` flags, new versions and contents, deletions, rejections."""
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
            rows.append(
                (axis, path, sha, v.seq, v.raw_offset, h.event_time, h.kind, current[(axis, path)] == sha)
            )
            contents.setdefault((path, sha), stored)
        db.execute(
            "INSERT INTO documents (axis, path, sha256, seq, raw_offset, event_time, kind, current) "
            "SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5::BIGINT[]), "
            "unnest($6::TIMESTAMPTZ[]), unnest($7), unnest($8)",
            _columns(rows),
        )
        db.execute(
            "INSERT OR IGNORE INTO contents SELECT unnest($1), unnest($2), unnest($3), unnest($4)",
            _columns([(*k, c.summary_json, c.body_json) for k, c in contents.items()]),
        )
    _write_deletions(db, plan.deletions_changed())
    if plan.unrejected:
        db.execute(
            "DELETE FROM rejected USING (SELECT unnest($1) AS path, unnest($2) AS sha256) k "
            "WHERE rejected.path = k.path AND rejected.sha256 = k.sha256",
            _columns(list(plan.unrejected)),
        )
    if plan.rejected:
        db.execute(
            "INSERT OR IGNORE INTO rejected SELECT unnest($1), unnest($2), unnest($3), "
            "unnest($4::TIMESTAMPTZ[]), unnest($5::VARCHAR[]), unnest($6::TIMESTAMPTZ[])",
            _columns([(*k, *v) for k, v in plan.rejected.items()]),
        )


def _write_deletions(db: duckdb.DuckDBPyConnection, changed: Mapping[Key, Deletion | None]) -> None:
    if not changed:
        return
    db.execute(
        "DELETE FROM deletions USING (SELECT unnest($1) AS axis, unnest($2) AS path) k "
        "WHERE deletions.axis = k.axis AND deletions.path = k.path",
        _columns(list(changed)),
    )
    kept = [(*k, d.deleted_at, d.raw_offset) for k, d in changed.items() if d is not None]
    if kept:
        db.execute(
            "INSERT INTO deletions SELECT unnest($1), unnest($2), unnest($3::TIMESTAMPTZ[]), unnest($4::BIGINT[])",
            _columns(kept),
        )


def _columns(rows: Sequence[tuple[object, ...]]) -> list[list[object]]:
    """Rows (at least one) as the columns an `unnest($1), unnest($2) …` statement takes."""
    return [list(column) for column in zip(*rows, strict=True)]
