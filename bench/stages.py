"""Per-stage costs, in process, on notes of the generated archive: where a document's time goes."""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from processors.documents import parse_document
from processors.models import RawFile
from processors.near_duplicates import signature
from processors.routing import DocumentEvent, route_raw
from processors.text import text_hash
from sinks.state import StateStore
from streams.settings import DEFAULT_AXES

SH = ZoneInfo("Asia/Shanghai")


def _us_per(fn: Callable[[], object], count: int, repeats: int = 2) -> float:
    """Microseconds per item, best of `repeats`: the machine is shared."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return round(best / count * 1e6, 1)


def _raw(root: Path, rel: str) -> RawFile:
    data = (root / rel).read_bytes()
    return RawFile(path=rel, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())


def _batch_insert(db: duckdb.DuckDBPyConnection, events: Sequence[DocumentEvent]) -> None:
    """The same rows as put_document writes, in one statement (what a micro-batching sink would do)."""
    rows = [
        (
            e.axis,
            e.path,
            e.sha256,
            i,
            e.document.event_time,
            e.document.kind,
            True,
            e.document.model_dump_json(),
        )
        for i, e in enumerate(events)
        if e.document is not None
    ]
    cols = [list(c) for c in zip(*rows, strict=True)]
    db.execute(
        "INSERT INTO documents SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5), "
        "unnest($6), unnest($7), unnest($8)",
        cols,
    )


def measure(root: Path, paths: Sequence[str]) -> dict[str, float]:
    """µs per document of each stage (duckdb rows: per stored row, i.e. per document and axis)."""
    n = len(paths)

    def read_hash() -> None:
        for rel in paths:
            hashlib.sha256((root / rel).read_bytes()).hexdigest()

    raws = [_raw(root, rel) for rel in paths]
    texts = [parse_document(r, zone=SH).text for r in raws]
    seen = datetime.now(UTC)
    events = [e for r in raws for e in route_raw(r, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=seen)]
    encoded = [e.model_dump_json().encode() for e in events]
    raw_json = [r.model_dump_json().encode() for r in raws]
    out = {
        "read_hash": _us_per(read_hash, n),
        "raw_json_decode": _us_per(lambda: [RawFile.model_validate_json(v) for v in raw_json], n),
        "parse": _us_per(lambda: [parse_document(r, zone=SH) for r in raws], n, 1),
        "near_dup": _us_per(lambda: [signature(t) for t in texts], n),
        "text_hash": _us_per(lambda: [text_hash(t) for t in texts], n),
        "event_json_encode": _us_per(lambda: [e.model_dump_json() for e in events], n),
        "event_json_decode": _us_per(lambda: [DocumentEvent.model_validate_json(v) for v in encoded], n),
    }
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        state = StateStore(Path(tmp) / "rows.duckdb")
        t = time.perf_counter()
        for offset, e in enumerate(events):
            assert e.axis is not None and e.document is not None
            state.put_document(e.axis, e.document, raw_offset=offset)
        row_s = time.perf_counter() - t
        state.close()
        db = duckdb.connect(str(Path(tmp) / "rows.duckdb"))
        db.execute("DELETE FROM documents")
        t = time.perf_counter()
        _batch_insert(db, events)
        batch_s = time.perf_counter() - t
        db.close()
    out["duckdb"] = round(row_s / len(events) * 1e6, 1)
    out["duckdb_batch"] = round(batch_s / len(events) * 1e6, 1)
    out["axes_per_doc"] = round(len(events) / n, 2)
    out["event_json_bytes"] = round(sum(map(len, encoded)) / len(encoded))
    out["raw_json_bytes"] = round(sum(map(len, raw_json)) / n)
    out["file_bytes"] = round(sum(r.size for r in raws) / n)
    return out


def briefing_scaling(root: Path, paths: Sequence[str], sizes: Sequence[int]) -> dict[str, float]:
    """Seconds of assemble_briefing (the worker's briefing logic, no I/O) over windows of growing size."""
    from datetime import timedelta

    from bench.archive import END, living_documents
    from processors.briefing import assemble_briefing
    from processors.window import window_bounds

    docs = [parse_document(_raw(root, rel), zone=SH) for rel in paths[: max(sizes)]]
    living_text = living_documents()["living/inference.md"].encode()
    living = parse_document(
        RawFile(
            path="living/inference.md", content=living_text, size=len(living_text), mtime=0.0, sha256="l"
        ),
        zone=SH,
    )
    out = {}
    for n in sizes:
        t = time.perf_counter()
        assemble_briefing(
            axis=DEFAULT_AXES[0],
            trigger="flush",
            window=window_bounds(END, timedelta(hours=24)),
            generated_at=END,
            documents=docs[:n],
            living=living,
            earlier_cited_ids=set(),
            axes=DEFAULT_AXES,
            zone=SH,
        )
        out[str(n)] = round(time.perf_counter() - t, 2)
    return out


def growth_exponent(points: dict[str, float]) -> float:
    """The k of time ∝ n^k between the smallest and the largest point (1.0: linear)."""
    import math

    (n0, t0), (n1, t1) = (
        min(points.items(), key=lambda kv: int(kv[0])),
        max(points.items(), key=lambda kv: int(kv[0])),
    )
    return round(math.log(t1 / t0) / math.log(int(n1) / int(n0)), 2)
