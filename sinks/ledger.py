"""The watcher's ledger: what Kafka acknowledged per path, so a restart republishes nothing unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from sinks import duck

LEDGER = duck.DuckFile(
    "watcher ledger",
    if_locked="Is another watcher running on this root?",
    if_damaged="move it aside and start the watcher again: it republishes every file, which the worker stores once",
)


def _create(db: duckdb.DuckDBPyConnection, path: Path) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS ledger (path VARCHAR PRIMARY KEY, size BIGINT, mtime DOUBLE, sha256 VARCHAR)"
    )


class Ledger:
    """One row per root-relative path: size, mtime and sha256 of the last acknowledged version."""

    def __init__(self, path: Path) -> None:
        self._db = duck.open_checked(path, LEDGER, _create)

    def close(self) -> None:
        self._db.close()

    def get(self, path: str) -> tuple[int, float, str] | None:
        row = self._db.execute("SELECT size, mtime, sha256 FROM ledger WHERE path=?", [path]).fetchone()
        return (int(row[0]), float(row[1]), str(row[2])) if row else None

    def acknowledge(self, path: str, size: int, mtime: float, sha256: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO ledger VALUES (?, ?, ?, ?)", [path, size, mtime, sha256])

    def acknowledge_many(self, rows: Sequence[tuple[str, int, float, str]]) -> None:
        """Many acknowledgements in one statement: row at a time costs milliseconds per row."""
        if not rows:
            return
        paths, sizes, mtimes, digests = (list(col) for col in zip(*rows, strict=True))
        self._db.execute(
            "INSERT OR REPLACE INTO ledger SELECT unnest($1), unnest($2), unnest($3), unnest($4)",
            [paths, sizes, mtimes, digests],
        )

    def entries(self) -> dict[str, tuple[int, float, str]]:
        """Every acknowledged path with its (size, mtime, sha256), in one query."""
        rows = self._db.execute("SELECT path, size, mtime, sha256 FROM ledger").fetchall()
        return {str(r[0]): (int(r[1]), float(r[2]), str(r[3])) for r in rows}

    def forget(self, path: str) -> None:
        self._db.execute("DELETE FROM ledger WHERE path=?", [path])

    def paths(self) -> set[str]:
        return {str(r[0]) for r in self._db.execute("SELECT path FROM ledger").fetchall()}
