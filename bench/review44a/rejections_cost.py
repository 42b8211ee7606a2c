"""The rejections read of a briefing over a synthetic state: `python -m bench.review44a.rejections_cost N AXES REFUSED [VARIANT_FIRST]`.

Its documents rows are made in SQL (no contents: the read joins none), so only that read's cost is measured,
with and without the check that no other axis holds a later version (sinks.rejections.LATEST).
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from processors.models import WindowBounds
from sinks import rejections
from sinks.state import StateStore


def main(notes: int, axes: int, refused: int, variant_first: int = 0) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = StateStore(Path(tmp) / "worker.duckdb")
        db = state._db
        start = datetime(2026, 9, 1, tzinfo=UTC)
        db.execute(
            "INSERT INTO documents SELECT 'axis' || a, 'inbox/n' || i || '.md', md5(i::VARCHAR), i * 8 + a, i, "
            "$1::TIMESTAMPTZ + to_minutes(i), 'note', true FROM range($2) t(i), range($3) s(a)",
            [start, notes, axes],
        )
        db.execute(
            "INSERT INTO rejected SELECT 'axis' || a, 'inbox/n' || (i * 97 % $2) || '.md', 'x', 'binary', "
            "$1::TIMESTAMPTZ, 'binary', $1::TIMESTAMPTZ + to_minutes(i), $2 + i FROM range($3) t(i), range($4) s(a)",
            [start, notes, refused, axes],
        )
        window = WindowBounds(start=start + timedelta(days=30), end=start + timedelta(days=31))
        runs = [("main", "true"), ("variant", rejections.LATEST)]
        for label, latest in reversed(runs) if variant_first else runs:
            rejections.LATEST = latest
            times = []
            for _ in range(7):
                t = time.perf_counter()
                found = rejections.rejections(db, window, "axis0")
                times.append(time.perf_counter() - t)
            print(
                f"{label:8} {len(found):5} listed  median {sorted(times)[3] * 1000:7.1f} ms  min {min(times) * 1000:7.1f} ms"
            )
        state.close()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:5]))
