"""`GET /status`'s state read over a 100k-note state with refused files, in the tree on PYTHONPATH.

    python -m bench.brief_memory build --n 100000 --state S        # once: the archive's notes stored
    python bench/review45b/status_cost.py refuse S COPY REFUSED    # a copy with REFUSED refused paths
    PYTHONPATH=TREE python bench/review45b/status_cost.py time COPY RUNS [empty]

`refuse` adds, in SQL, REFUSED paths refused on every axis as a refusal is (half never stored, half stored notes
refused since, by a later raw offset) and one refused then fixed (a later version), so each check of
`sinks.rejections.LATEST` has documents to look at. `time` opens the copy as the worker does and times the
snapshot's read (`streams.status._read_axes`) over an empty window (the current one, a day after the archive)
and over the archive's (not with `empty`), and each part of it: thread CPU and wall, the median and min of RUNS, load beside.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from bench.archive import END
from processors.models import WindowBounds
from processors.window import window_bounds
from sinks.state import StateStore
from streams import status
from streams.settings import Settings

REASON = ": binary file (NUL bytes)"
FIXED = 1000  # stored notes refused before their version: rows LATEST hides


def refuse(source: Path, copy: Path, refused: int) -> None:
    shutil.copyfile(source, copy)
    state = StateStore(copy)
    db = state._db  # the bench writes rows as the version plan would
    top = db.execute("SELECT max(raw_offset) FROM documents").fetchone()
    base = int(top[0] if top else 0) + 1
    picked = db.execute(
        "SELECT path FROM documents WHERE raw_offset > 0 GROUP BY path ORDER BY hash(path) LIMIT $1",
        [refused // 2 + FIXED],
    ).fetchall()
    stored = [r[0] for r in picked]
    fixed, stored = stored[:FIXED], stored[FIXED:]
    paths = [*stored, *(f"inbox/refused/2026-09-27-0900-r{i}.md" for i in range(refused - len(stored)))]
    axes = [a.name for a in Settings(state_dir=copy.parent).axes]
    for rows, first in (
        (paths, base),
        (fixed, None),
    ):  # the fixed ones refused before their version (offset 0)
        db.execute(
            "INSERT INTO rejected SELECT a, p, 'x', p || $1, $2::TIMESTAMPTZ + to_seconds(i), 'binary', "
            "$2::TIMESTAMPTZ, coalesce($3 + i, 0) FROM (SELECT unnest($4) AS p, generate_subscripts($4, 1) AS i), "
            "unnest($5) t(a)",
            [REASON, END - timedelta(hours=2), first, rows, axes],
        )
    counts = db.execute("SELECT count(*), count(DISTINCT path) FROM rejected").fetchone()
    state.close()
    print(
        json.dumps(
            {"standing": len(paths), "stored_refused": len(stored), "fixed": len(fixed), "rows": counts}
        )
    )


def _timed(runs: int, read: Callable[[], object]) -> dict[str, float]:
    """Median and min of `runs` reads: wall, this thread's CPU and the process's (DuckDB's own threads too)."""
    took: dict[str, list[float]] = {"wall": [], "thread_cpu": [], "process_cpu": []}
    for _ in range(runs):
        w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
        read()
        took["wall"].append(time.perf_counter() - w)
        took["thread_cpu"].append(time.thread_time() - t)
        took["process_cpu"].append(time.process_time() - p)
    return {
        f"{k}_{f.__name__}": round(f(v) * 1000, 2) for k, v in took.items() for f in (statistics.median, min)
    }


def _snapshot_read(state: StateStore, settings: Settings, window: WindowBounds) -> object:
    return status._read_axes(state.reader(), settings, [a.name for a in settings.axes], window)


def timed(copy: Path, runs: int, empty_only: bool) -> None:
    settings = Settings(state_dir=copy.parent)
    axes = [a.name for a in settings.axes]
    state = StateStore(copy)
    out: dict[str, object] = {"tree": str(Path(status.__file__).parents[1]), "load": os.getloadavg()[0]}
    windows = (("empty_window", END + timedelta(days=1)), ("archive_window", END))[: 1 if empty_only else 2]
    for name, end in windows:
        window = window_bounds(end, settings.window_length)
        out[name] = _timed(runs, partial(_snapshot_read, state, settings, window))
    with state.reader() as reader:
        counts = reader.counts
        out["counts_before"] = _timed(
            runs, lambda: [(counts.window_document_count(a, window), counts.axis_summary(a)) for a in axes]
        )
        if hasattr(counts, "refusals"):  # one query for every axis since review45b, one per axis before
            refusals: Any = counts.refusals  # its signature is the tree's
            one = next(iter(inspect.signature(refusals).parameters)) == "axes"
            out["refusals"] = _timed(runs, lambda: refusals(axes) if one else [refusals(a) for a in axes])
    if hasattr(status, "_refused"):  # the answer's bytes, to compare between trees
        read = status._read_axes(state.reader(), settings, axes, window)
        body = json.dumps({a: read[a]["refused"] for a in axes}, sort_keys=True).encode()
        out["refused_sha256"] = hashlib.sha256(body).hexdigest()[:16]
        out["refused_inference"] = read[axes[0]]["refused"]
    state.close()
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    if sys.argv[1] == "refuse":
        refuse(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        timed(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:] == ["empty"])
