"""Documents in the state: records written through the version plan, and the reads a briefing makes."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
from predigest_native import TextColumns, TypedColumns

from processors.models import Document, Rejection, WindowBounds
from processors.summary_parts import rest_of
from processors.versions import BatchPlan, Deletion, Key, PathVersions, Refused, Version
from processors.wire import DocumentRecord, StoredDocument
from sinks.duck import micros, unnest_columns
from sinks.rejections import LEGACY_AXIS, NOT_REFUSED, rejections, write_refusals
from sinks.summary_rows import SUMMARY_COLUMNS, WholeRow, summary_joins, with_rows
from sinks.unreadable import Unreadable, whole_documents

log = logging.getLogger(__name__)

# The path's latest record is its current version: neither deleted nor refused since.
NOT_GONE = f"NOT EXISTS (SELECT 1 FROM deletions x WHERE x.axis=d.axis AND x.path=d.path) AND {NOT_REFUSED}"
# What a briefing of the window sees: the current versions dated in it still there (living documents apart).
IN_WINDOW = f"axis=? AND current AND kind <> 'living' AND event_time >= ? AND event_time < ? AND {NOT_GONE}"


NewContents = dict[tuple[str, str], DocumentRecord]  # (path, sha256) → its first record
# The documents table's columns, in order, and their types as TypedColumns reads them.
DOCUMENT_COLUMNS = ("axis", "path", "sha256", "seq", "raw_offset", "event_time", "kind", "current")
DOCUMENT_TYPES = ("text", "text", "text", "int64", "int64?", "timestamp", "text", "bool")
CONTENT_COLUMNS = ("path", "sha256", "summary_json", "body_zst")  # the contents table's, in order


@dataclass(frozen=True)
class Written:
    """What a batch's write did: per record, whether a briefing sees it; and the versions whose contents it stored
    first (the state held no row of them), which get their source rows (sinks.source_rows) in the same step."""

    outcomes: list[bool]
    contents: NewContents


@dataclass
class Held:
    """What the state holds of some paths: their versions, deletions and refusals per axis, contents, and the paths
    with a rejection row without an axis (sinks.rejections)."""

    versions: dict[Key, PathVersions] = field(default_factory=dict)
    contents: set[tuple[str, str]] = field(default_factory=set)  # (path, sha256) with a contents row
    legacy: set[str] = field(default_factory=set)

    def add(self, other: Held) -> None:
        """Add another path's holdings, copied: the plan changes the versions it is given."""
        for key, path in other.versions.items():
            copied = {sha: Version(v.raw_offset, v.seq) for sha, v in path.versions.items()}
            self.versions[key] = PathVersions(copied, path.deletion, path.refused)
        self.contents |= other.contents
        self.legacy |= other.legacy

    @classmethod
    def after(cls, held: Held, plan: BatchPlan) -> dict[str, Held]:
        """What the state holds of each path it held whole once the plan is written, per path."""
        out: dict[str, Held] = {}

        def of(path: str) -> Held:
            held = out.get(path)
            if held is None:  # built only when missing: setdefault built one (a dict and two sets) every call
                held = out[path] = cls()
            return held

        for key, versions in plan.paths.items():
            of(key[1]).versions[key] = versions
        for path, sha in held.contents | {(p, sha) for _, p, sha in plan.new_versions}:
            of(path).contents.add((path, sha))
        for path in (held.legacy - plan.legacy_dropped) | set(plan.legacy):
            of(path).legacy.add(path)
        return out


class PathFilter:
    """Every path the state may hold a row of: a hash of each, a few dozen bytes per path.

    Only this connection writes the state (one writer per file), so the paths are read once and every path
    a write brings is added. A hash shared by two paths (or a rolled-back write) only costs a read.
    """

    def __init__(self, hashes: set[int]) -> None:
        self._hashes = hashes

    @classmethod
    def of(cls, db: duckdb.DuckDBPyConnection) -> PathFilter:
        rows = db.execute(
            "SELECT path FROM documents UNION SELECT path FROM deletions UNION SELECT path FROM rejected"
        ).fetchall()
        return cls({hash(r[0]) for r in rows})

    def __contains__(self, path: str) -> bool:
        return hash(path) in self._hashes

    def add(self, paths: Iterable[str]) -> None:
        self._hashes.update(hash(p) for p in paths)


class Documents:
    """The documents, contents, deletions and rejected tables; writes run in the caller's transaction."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db
        self._paths: PathFilter | None = None  # read at the first write: a reader's Documents never needs it
        # The paths of the last committed batch, as the state now holds them; and those of the open
        # transaction, remembered once it commits (`settle`).
        self._recent: dict[str, Held] = {}
        self._pending: dict[str, Held] | None = None

    def write(self, records: Sequence[DocumentRecord]) -> Written:
        """Apply records as if one by one: per record, whether a briefing sees what it brought, and the new contents.

        Worked out in memory (processors.versions) from the rows of the paths they touch, then written with a
        handful of set-based statements whatever their number. Call `settle` when the transaction ends.
        """
        documents = sum(1 for r in records if r.header.type == "document")
        held, whole = self._held(records)
        plan = BatchPlan(held.versions, iter(self._seqs(documents)).__next__, held.legacy)
        outcomes = [plan.apply(r) for r in records]
        contents = _write_plan(self._db, plan, held.contents)
        after = Held.after(held, plan)
        pending = self._pending if self._pending is not None else {}
        self._pending = pending | {path: after[path] if path in after else Held() for path in whole}
        return Written(outcomes, contents)

    def settle(self, committed: bool) -> None:
        """The writing transaction ended: the paths it wrote are remembered if it committed, none if not."""
        if self._pending is not None:
            self._recent = self._pending if committed else {}
        self._pending = None

    def _held(self, records: Sequence[DocumentRecord]) -> tuple[Held, set[str]]:
        """What the state holds of the paths the records touch (versions, deletions, refusals, contents), and
        those paths (all of them held whole: new ones, the last batch's from memory, the others read)."""
        # Read only for the other paths it may hold (`PathFilter`): a backlog of new notes reads nothing, where
        # every read scans the tables (DuckDB has no index on the path alone). The last batch's paths are kept
        # because a note's records (one per axis) are often cut between two batches.
        if self._paths is None:
            self._paths = PathFilter.of(self._db)
        touched = {r.header.path for r in records if r.header.type in ("document", "deletion", "rejection")}
        maybe = {p for p in touched if p in self._paths}
        self._paths.add(touched)  # before the commit: a path it did not bring only costs a read
        # The last batch's holdings are stale inside a transaction that already wrote (a second write).
        recent = self._recent if self._pending is None else {}
        known = {p for p in maybe if p in recent}
        held = Held()
        for path in known:
            held.add(recent[path])
        unknown = maybe - known
        if unknown:
            self._read(sorted(unknown), held)
        return held, touched  # every touched path is held whole now: new, remembered, or read

    def _read(self, paths: list[str], held: Held) -> None:
        rows = self._db.execute(
            "SELECT 'v', axis, path, sha256, raw_offset, seq, NULL, NULL, NULL, NULL FROM documents "
            "WHERE path IN (SELECT unnest($1)) "
            "UNION ALL SELECT 'x', axis, path, NULL, raw_offset, NULL, deleted_at, NULL, NULL, NULL FROM deletions "
            "WHERE path IN (SELECT unnest($1)) "
            "UNION ALL SELECT 'r', axis, path, sha256, raw_offset, NULL, seen_at, reason, reason_code, event_time "
            "FROM rejected WHERE path IN (SELECT unnest($1))",
            [paths],
        ).fetchall()
        for table, axis, path, sha, raw_offset, seq, at, reason, code, event_time in rows:
            if table == "v":
                versions = held.versions.setdefault((axis, path), PathVersions()).versions
                versions[sha] = Version(raw_offset, seq)
                held.contents.add((path, sha))
            elif table == "x":
                held.versions.setdefault((axis, path), PathVersions()).deletion = Deletion(at, raw_offset)
            elif axis == LEGACY_AXIS:
                held.legacy.add(path)
            else:
                refused = Refused(sha, reason, code, at, event_time, raw_offset)
                held.versions.setdefault((axis, path), PathVersions()).refused = refused

    def _seqs(self, n: int) -> list[int]:
        if n == 0:
            return []
        rows = self._db.execute("SELECT nextval('doc_seq') FROM range(?)", [n]).fetchall()
        return sorted(int(r[0]) for r in rows)

    def _docs(
        self, where: str, params: Sequence[object], unreadable: Unreadable | None = None
    ) -> list[Document]:
        # Their paths filter the scan of `contents` itself (DuckDB cannot push a join's keys into it); none found,
        # it is not scanned at all (a briefing's search for yesterday's baseline: ~25 ms at 10k finding none).
        found = self._db.execute(f"SELECT DISTINCT path FROM documents d WHERE {where}", list(params))
        paths = [p for (p,) in found.fetchall()]
        if not paths:
            return []
        rows = self._db.execute(
            f"SELECT d.path, d.axis, {SUMMARY_COLUMNS} FROM documents d {summary_joins('?')} WHERE {where} "
            "ORDER BY d.event_time, d.path",
            [paths, paths, *params],
        ).fetchall()
        return whole_documents(with_rows(self._db, rows), unreadable)

    def latest_baseline(
        self, axis: str, before: datetime, since: datetime, unreadable: Unreadable | None = None
    ) -> Document | None:
        """The newest earlier briefing of `axis` dated in [since, before): yesterday's, for the baseline."""
        docs = self._docs(
            f"axis=? AND current AND kind='baseline' AND event_time >= ? AND event_time < ? AND {NOT_GONE}",
            [axis, since, before],
            unreadable,
        )
        own = [d for d in docs if d.baseline_axis == axis]
        return own[-1] if own else None

    def living_document(self, axis: str) -> Document | None:
        return self.living_documents([axis])[axis]

    def living_documents(
        self, axes: Sequence[str], unreadable: Unreadable | None = None
    ) -> dict[str, Document | None]:
        """Each axis's living document (None when it has none), in one scan of `contents`: a briefing reads every
        axis's, and a scan costs ~10 ms at 10k however few it finds (docs/performance.md)."""
        living = f"d.axis = ANY($1::VARCHAR[]) AND current AND kind='living' AND {NOT_GONE}"
        found = self._db.execute(
            f"SELECT DISTINCT path FROM documents d WHERE {living}", [list(axes)]
        ).fetchall()
        # Their paths filter the scan of `contents` itself (DuckDB cannot push a join's keys into it).
        rows = self._db.execute(
            f"SELECT d.path, d.axis, {SUMMARY_COLUMNS} FROM documents d {summary_joins('$2')} WHERE {living} "
            "ORDER BY d.event_time, d.path",
            [list(axes), [p for (p,) in found]],
        ).fetchall()
        of_axis: dict[str, list[WholeRow]] = {a: [] for a in axes}
        for row in with_rows(self._db, rows):
            of_axis[row[1]].append(row)
        # The latest that can be read, as for any other read of a document.
        return {a: next(reversed(whole_documents(r, unreadable)), None) for a, r in of_axis.items()}

    def rejections(self, window: WindowBounds, axis: str) -> list[Rejection]:
        """The files of the axis refused by their latest record that the window's briefing lists (sinks.rejections)."""
        return rejections(self._db, window, axis)


def _write_plan(db: duckdb.DuckDBPyConnection, plan: BatchPlan, held: set[tuple[str, str]]) -> NewContents:
    """The planned rows: raised raw offsets, `current` flags, new versions and contents (`held`: those with a
    contents row), deletions, refusals; returns the contents it stored."""
    current = {k: plan.current_of(k) for k in plan.touched}
    if plan.raised:
        db.execute(
            "UPDATE documents SET raw_offset = m.raw_offset FROM (SELECT unnest($1) AS axis, "
            "unnest($2) AS path, unnest($3) AS sha256, unnest($4) AS raw_offset) m "
            "WHERE documents.axis = m.axis AND documents.path = m.path AND documents.sha256 = m.sha256",
            unnest_columns([(*k, offset) for k, offset in plan.raised.items()]),
        )
    old = [k for k in plan.touched if k in plan.stored_paths]
    if old:
        db.execute(
            "UPDATE documents SET current = (documents.sha256 = c.sha256) FROM (SELECT unnest($1) AS axis, "
            "unnest($2) AS path, unnest($3) AS sha256) c WHERE documents.axis = c.axis AND documents.path = c.path",
            unnest_columns([(*k, current[k]) for k in old]),
        )
    contents = _write_versions(db, plan, current, held) if plan.new_versions else {}
    _write_deletions(db, plan.deletions_changed())
    write_refusals(db, plan)
    return contents


def _write_versions(
    db: duckdb.DuckDBPyConnection, plan: BatchPlan, current: Mapping[Key, str], held: set[tuple[str, str]]
) -> NewContents:
    """The new versions' rows, and the contents of those the state has no row of yet, as Arrow batches.

    `TypedColumns` reads the rows' values in a fraction of the time DuckDB's appender took to convert each one
    holding the GIL (~13 µs a note, docs/performance.md); the `unnest` of list parameters before it built a list
    value of every column first, and INSERT OR IGNORE probed the key.
    """
    rows = []
    contents: NewContents = {}
    paths = plan.paths
    # A note's rows (one per axis) share its header's time: converted once (`micros`, ~0.5 µs a row).
    last: tuple[datetime | None, int | None] = (None, None)
    for (axis, path, sha), record in plan.new_versions.items():
        v = paths[(axis, path)].versions[sha]
        h = record.header
        if h.event_time is not last[0]:
            last = (h.event_time, micros(h.event_time) if h.event_time is not None else None)
        rows.append((axis, path, sha, v.seq, v.raw_offset, last[1], h.kind, current[(axis, path)] == sha))
        if (path, sha) not in held:
            contents.setdefault((path, sha), record)
    columns = TypedColumns(list(DOCUMENT_COLUMNS), list(DOCUMENT_TYPES), list(zip(*rows, strict=True)))
    db.from_arrow(columns).insert_into("documents")
    if contents:
        _insert_contents(db, contents)
    return contents


def _insert_contents(db: duckdb.DuckDBPyConnection, contents: NewContents) -> None:
    """The contents rows as one Arrow batch (predigest_native.TextColumns, read by DuckDB in C++: the appender
    converted each string holding the GIL, docs/performance.md): of each summary only what its source rows do not
    hold (processors.summary_parts); their bodies as v7 records carry them."""
    stored = [_stored(r) for r in contents.values()]
    columns = TextColumns(
        # The body a BLOB: its frame as it is.
        [*CONTENT_COLUMNS[:-1], f"blob:{CONTENT_COLUMNS[-1]}"],
        [
            [p for p, _ in contents],
            [s for _, s in contents],
            [rest_of(d.summary_json) for d in stored],
            [d.body_frame() for d in stored],
        ],
    )
    db.from_arrow(columns).insert_into("contents")


def _stored(record: DocumentRecord) -> StoredDocument:
    """A planned document's summary and body (the plan takes only documents that carry them)."""
    assert record.stored is not None
    return record.stored


def _write_deletions(db: duckdb.DuckDBPyConnection, changed: Mapping[Key, Deletion | None]) -> None:
    if not changed:
        return
    db.execute(
        "DELETE FROM deletions USING (SELECT unnest($1) AS axis, unnest($2) AS path) k "
        "WHERE deletions.axis = k.axis AND deletions.path = k.path",
        unnest_columns(list(changed)),
    )
    kept = [(*k, d.deleted_at, d.raw_offset) for k, d in changed.items() if d is not None]
    if kept:
        db.execute(
            "INSERT INTO deletions SELECT unnest($1), unnest($2), unnest($3::TIMESTAMPTZ[]), unnest($4::BIGINT[])",
            unnest_columns(kept),
        )
