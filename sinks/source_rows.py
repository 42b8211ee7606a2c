"""Each stored version's source facts (processors.source_facts), written in the transaction that stores it.

A v4 documents record carries them, worked out by the parse processes; an older one's are worked out here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
from predigest_native import FactRows, TypedColumns

from processors.near_duplicates import NUM_PERM
from processors.source_facts import SourceFacts, source_facts
from processors.wire import DocumentRecord

# The source_rows table's columns, in order, and their types as TypedColumns reads them.
SOURCE_ROW_COLUMNS = (
    "vid",
    "path",
    "sha256",
    "text_hash",
    "length",
    "counted",
    "arxiv_ids",
    "topic",
    "summary_json",
)
SOURCE_ROW_TYPES = ("int64", "text", "text", "text", "int32", "bool", "text[]", "text", "text")


class SourceRows:
    """The source_rows, source_terms, source_signatures and source_titles tables; writes run in the caller's
    transaction."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def write(self, contents: Mapping[tuple[str, str], DocumentRecord]) -> None:
        """The facts of the versions whose contents the batch stored first (`Documents.write`): a version has
        its source rows exactly when it has its contents, so the state is not searched for them."""
        versions = {
            key: (r.stored.summary_json, r.facts) for key, r in contents.items() if r.stored is not None
        }
        if versions:
            self._insert(versions)

    def _insert(self, versions: dict[tuple[str, str], tuple[str | bytes, SourceFacts | None]]) -> None:
        rows = self._db.execute("SELECT nextval('source_seq') FROM range(?)", [len(versions)]).fetchall()
        vids = sorted(int(r[0]) for r in rows)
        facts = [carried or source_facts(summary) for summary, carried in versions.values()]
        keys = list(versions)
        # An Arrow batch (TypedColumns): DuckDB's appender converted each value holding the GIL, and the
        # `unnest` of list parameters before it built a list value of every column first.
        rows = [
            (vid, p, s, f.text_hash, f.length, f.counted, f.arxiv_ids, f.topic, f.summary_json)
            for vid, (p, s), f in zip(vids, keys, facts, strict=True)
        ]
        columns = TypedColumns(
            list(SOURCE_ROW_COLUMNS), list(SOURCE_ROW_TYPES), list(zip(*rows, strict=True))
        )
        self._db.from_arrow(columns).insert_into("source_rows")
        self._insert_titles(vids, facts)
        # The term counts and the signature, read from JSON of their own into Arrow rows without the GIL
        # (predigest_native.FactRows): DuckDB's JSON casts cost ~30 µs a note, Python lists four times as much.
        # A signature of another length (a tiny text, another scheme) is not stored: exact duplicates only, as
        # processors.near_duplicates does.
        terms = FactRows.terms(vids, [f.terms_json for f in facts])
        if len(terms):
            self._db.from_arrow(terms).insert_into("source_terms")
        signatures = FactRows.signatures(vids, [f.signature_json for f in facts], NUM_PERM)
        if len(signatures):
            self._db.from_arrow(signatures).insert_into("source_signatures")

    def _insert_titles(self, vids: Sequence[int], facts: Sequence[SourceFacts]) -> None:
        rows = [(vid, t) for vid, f in zip(vids, facts, strict=True) for t in f.titled]
        if not rows:
            return
        columns = [
            [vid for vid, _ in rows],
            [t.n for _, t in rows],
            [t.pair.id for _, t in rows],
            [t.pair.title for _, t in rows],
            [t.pair.source for _, t in rows],
            [t.pair.strong for _, t in rows],
            [t.pair.rank for _, t in rows],
            [t.mark[0] for _, t in rows],
            [t.mark[1] for _, t in rows],
            [t.bounded for _, t in rows],
        ]
        self._db.execute(
            "INSERT INTO source_titles SELECT " + ", ".join(f"unnest(${i + 1})" for i in range(len(columns))),
            columns,
        )
