"""Each stored version's source facts (processors.source_facts), written in the transaction that stores it."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from processors.source_facts import SourceFacts, source_facts
from processors.wire import DocumentRecord
from sinks.schema import SIGNATURE_SLOTS

_SLOTS = ", ".join(f"unnest(${i + 2}::UBIGINT[])" for i in range(SIGNATURE_SLOTS))


class SourceRows:
    """The source_rows, source_terms and source_signatures tables; writes run in the caller's transaction."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def write(self, records: Sequence[DocumentRecord]) -> None:
        """The facts of the versions these records bring that the state does not hold yet (once per version,
        whichever of its axes' records comes first)."""
        versions = {
            (r.header.path, r.header.sha256): r.stored.summary_json
            for r in records
            if r.header.type == "document" and r.stored is not None
        }
        if not versions:
            return
        held = self._db.execute(
            "SELECT s.path, s.sha256 FROM source_rows s JOIN (SELECT unnest($1) AS path, unnest($2) AS sha256) k "
            "ON s.path = k.path AND s.sha256 = k.sha256",
            [[p for p, _ in versions], [s for _, s in versions]],
        ).fetchall()
        for key in held:
            versions.pop(key, None)
        if versions:
            self._insert({key: source_facts(summary) for key, summary in versions.items()})

    def _insert(self, facts: dict[tuple[str, str], SourceFacts]) -> None:
        rows = self._db.execute("SELECT nextval('source_seq') FROM range(?)", [len(facts)]).fetchall()
        vids = sorted(int(r[0]) for r in rows)
        items = list(zip(vids, facts.items(), strict=True))
        self._db.execute(
            "INSERT INTO source_rows SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5), "
            "unnest($6), unnest($7::VARCHAR[][]), unnest($8), unnest($9)",
            [
                vids,
                [p for _, ((p, _), _) in items],
                [s for _, ((_, s), _) in items],
                [f.text_hash for _, (_, f) in items],
                [f.length for _, (_, f) in items],
                [bool(f.terms) for _, (_, f) in items],
                [list(f.arxiv_ids) for _, (_, f) in items],
                [f.topic for _, (_, f) in items],
                [f.summary_json for _, (_, f) in items],
            ],
        )
        terms = [(vid, t, n) for vid, (_, f) in items for t, n in f.terms.items()]
        if terms:
            self._db.execute(
                "INSERT INTO source_terms SELECT unnest($1), unnest($2), unnest($3)",
                [[v for v, _, _ in terms], [t for _, t, _ in terms], [n for _, _, n in terms]],
            )
        signed = [(vid, f.signature) for vid, (_, f) in items if f.signature is not None]
        if signed:
            slots = [list(column) for column in zip(*(sig for _, sig in signed), strict=True)]
            self._db.execute(
                f"INSERT INTO source_signatures SELECT unnest($1), {_SLOTS}", [[v for v, _ in signed], *slots]
            )
