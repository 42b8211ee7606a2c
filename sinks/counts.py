"""Status counts of the state: documents held per axis and in a window, without decoding any; refused files."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from processors.models import WindowBounds
from sinks.documents import IN_WINDOW
from sinks.rejections import AxisRefusals, axes_refusals


class Counts:
    """What `predigest status`, `/healthz` and the polled gauges show of the documents tables."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db

    def _count(self, sql: str, params: list[object]) -> int:
        row = self._db.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def document_count(self, axis: str | None = None) -> int:
        """Current document versions, of one axis or all."""
        if axis is None:
            return self._count("SELECT count(*) FROM documents WHERE current", [])
        return self._count("SELECT count(*) FROM documents WHERE current AND axis=?", [axis])

    def window_document_count(self, axis: str, window: WindowBounds) -> int:
        """How many documents a briefing of the window would see."""
        return self._count(
            f"SELECT count(*) FROM documents d WHERE {IN_WINDOW}", [axis, window.start, window.end]
        )

    def axis_summary(self, axis: str) -> dict[str, int]:
        """Counts for `predigest status`: current documents, superseded versions and deleted paths."""
        row = self._db.execute(
            "SELECT count(*) FILTER (WHERE current), count(*) FILTER (WHERE NOT current) FROM documents "
            "WHERE axis=?",
            [axis],
        ).fetchone()
        return {
            "documents": int(row[0]) if row else 0,
            "superseded": int(row[1]) if row else 0,
            "deleted": self._count("SELECT count(*) FROM deletions WHERE axis=?", [axis]),
        }

    def refusals(self, axes: Sequence[str]) -> dict[str, AxisRefusals]:
        """Each axis's files refused by their latest record (sinks.rejections): how many, and the newest."""
        return axes_refusals(self._db, axes)
