"""Applied offsets: the last Kafka record the state holds per (topic, partition), so a replay changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class Position:
    """Where a record sits in Kafka: the state remembers the last one applied per (topic, partition)."""

    topic: str
    partition: int
    offset: int


class AppliedOffsets:
    """The `applied` table; `claim` is the one check of a record against it."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def get(self, topic: str, partition: int) -> int | None:
        """The offset of the last record of (topic, partition) this state holds; None when none."""
        row = self._db.execute(
            "SELECT last_offset FROM applied WHERE topic=? AND part=?", [topic, partition]
        ).fetchone()
        return int(row[0]) if row else None

    def all(self) -> dict[tuple[str, int], int]:
        rows = self._db.execute("SELECT topic, part, last_offset FROM applied").fetchall()
        return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}

    def claim(self, positions: Sequence[Position | None]) -> list[bool]:
        """Per position, whether its record is new: above its partition's applied offset and the ones before it.

        The applied offsets advance to the new ones; call it in the transaction that writes what they bring,
        so a record and its offset are stored together or not at all. None (no Kafka record) is always new.
        """
        applied = self.all()
        advanced: dict[tuple[str, int], int] = {}
        fresh = []
        for pos in positions:
            if pos is not None:
                key = (pos.topic, pos.partition)
                last = applied.get(key)
                if last is not None and pos.offset <= last:
                    fresh.append(False)
                    continue
                applied[key] = advanced[key] = pos.offset
            fresh.append(True)
        if advanced:
            self._db.execute(
                "INSERT OR REPLACE INTO applied SELECT unnest($1), unnest($2), unnest($3)",
                [[k[0] for k in advanced], [k[1] for k in advanced], list(advanced.values())],
            )
        return fresh
