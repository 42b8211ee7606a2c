"""The worker's arXiv metadata cache: its own DuckDB file, with a negative cache for unknown ids."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import duckdb

from processors.arxiv_atom import ArxivRecord
from sinks import duck
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.errors import StateUnreadableError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id VARCHAR PRIMARY KEY, record_json VARCHAR NOT NULL, fetched_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS missing (
    id VARCHAR PRIMARY KEY, checked_at TIMESTAMPTZ NOT NULL
);
"""
CACHE = duck.DuckFile(
    "arXiv cache",
    if_locked="The worker owns it; stop the other process (deleting the file only costs API requests).",
    if_damaged="it is set aside and started afresh (that only costs API requests)",
    if_out_of_memory="raise arxiv.cache_memory_limit_mib (PREDIGEST_ARXIV__CACHE_MEMORY_LIMIT_MIB) and restart the "
    "worker; the file is not damaged",
)
# Many ids as one LIST parameter, so a lookup is one query whatever the window holds.
_IN_IDS = "id IN (SELECT unnest(?::VARCHAR[]))"


def _create(db: duckdb.DuckDBPyConnection, path: Path) -> None:
    db.execute(_SCHEMA)


class ArxivCache:
    """Records by id, kept until replaced; ids arXiv does not know are remembered for `negative_ttl`.

    `limits`: the memory and threads its DuckDB may take (the worker's: `arxiv.cache_*` settings)."""

    def __init__(
        self,
        path: Path,
        *,
        negative_ttl: timedelta = timedelta(days=1),
        clock: Clock = SYSTEM_CLOCK,
        limits: duck.Limits = duck.NO_LIMITS,
    ) -> None:
        self.negative_ttl = negative_ttl
        self._clock = clock
        try:
            self._db = duck.open_checked(path, CACHE, _create, limits)
        except StateUnreadableError as exc:
            aside = duck.set_aside(path, clock.now(), "unreadable")
            log.error("%s; set aside as %s", exc, aside)
            self._db = duck.open_checked(path, CACHE, _create, limits)

    def close(self) -> None:
        self._db.close()

    def get_many(self, ids: Iterable[str]) -> dict[str, ArxivRecord]:
        """The cached records of `ids`; ids not cached are absent."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._db.execute(f"SELECT id, record_json FROM records WHERE {_IN_IDS}", [wanted]).fetchall()
        return {row[0]: ArxivRecord.model_validate_json(row[1]) for row in rows}

    def put_many(self, records: Iterable[ArxivRecord]) -> None:
        """Store or replace records in one batch; an id that now exists leaves the negative cache."""
        now = self._clock.now()
        rows = [[r.id, r.model_dump_json(), now] for r in {r.id: r for r in records}.values()]
        if not rows:
            return
        # Rolled back when it raises: the enricher logs the error and goes on, and an open transaction would fail
        # every later batch (BEGIN within it) until a restart.
        with duck.transaction(self._db):
            self._db.executemany("INSERT OR REPLACE INTO records VALUES (?, ?, ?)", rows)
            self._db.execute(f"DELETE FROM missing WHERE {_IN_IDS}", [[r[0] for r in rows]])

    def put_missing(self, ids: Iterable[str]) -> None:
        """Remember that arXiv has no paper under these ids (until `negative_ttl` passes)."""
        now = self._clock.now()
        rows = [[i, now] for i in dict.fromkeys(ids)]
        if rows:
            self._db.executemany("INSERT OR REPLACE INTO missing VALUES (?, ?)", rows)

    def known_missing(self, ids: Iterable[str]) -> set[str]:
        """The ids arXiv said it does not have, less than `negative_ttl` ago."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        cutoff = self._clock.now() - self.negative_ttl
        rows = self._db.execute(
            f"SELECT id FROM missing WHERE {_IN_IDS} AND checked_at > ?", [wanted, cutoff]
        ).fetchall()
        return {row[0] for row in rows}
