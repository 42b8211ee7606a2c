"""Per-stage costs, in process, on notes of the generated archive: where a document's time goes."""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from bench import parse_speed
from processors.axes import assign_axes
from processors.documents import parse_document
from processors.fan_out import DocumentEvent, route_read
from processors.models import RawFile
from processors.raw_record import raw_record, read_raw
from processors.wire import decode_rows, encode_events
from sinks.state import Position, StateStore
from streams.settings import DEFAULT_AXES

SH = ZoneInfo("Asia/Shanghai")
BATCH = 500  # records per apply_batch (the worker's batch_records): a note's rows each


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


def measure(root: Path, paths: Sequence[str]) -> dict[str, float]:
    """µs per document of each stage (duckdb rows: per stored row, i.e. per document and axis)."""
    n = len(paths)

    def read_hash() -> None:
        for rel in paths:
            hashlib.sha256((root / rel).read_bytes()).hexdigest()

    raws = [_raw(root, rel) for rel in paths]
    docs = [parse_document(r, zone=SH) for r in raws]
    seen = datetime.now(UTC)
    per_note = [
        route_read(r, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=seen, raw_offset=i)[0]
        for i, r in enumerate(raws)
    ]
    events = [e for note in per_note for e in note]
    v1 = [e.model_dump_json().encode() for e in events]
    # One partition, as the worker's default: one record per note.
    v3 = [value for note in per_note for _, value in encode_events(note, {})]
    raw_json = [r.model_dump_json().encode() for r in raws]  # v1, as the watcher wrote until raw records v2
    raw_v2 = [raw_record(r) for r in raws]
    out = {
        "read_hash": _us_per(read_hash, n),
        "raw_json_decode": _us_per(lambda: [RawFile.model_validate_json(v) for v in raw_json], n),
        "raw_v2_decode": _us_per(lambda: [read_raw(v) for v in raw_v2], n),
        # parse_document with the compiled pass and with the Python pass of before (issue 14), and the pass
        # alone: "parse", "parse_python", "read_note", "read_note_python" (bench/parse_speed.py).
        **parse_speed.measure(raws, repeats=2),
        "assign_axes": _us_per(lambda: [assign_axes(d, DEFAULT_AXES) for d in docs], n),
        # Per note: v1 wrote the whole event for each of its axes, v3 one record with the document once (the
        # keys keep that name: the v4 record a v5 record packs is measured).
        "event_json_encode": _us_per(lambda: [e.model_dump_json() for e in events], n),
        "event_v3_encode": _us_per(lambda: [encode_events(note, {}) for note in per_note], n),
        # What the window agent decodes: v1 per record (one per axis), v3 per note (its one record).
        "event_json_decode": _us_per(lambda: [DocumentEvent.model_validate_json(v) for v in v1], len(v1)),
        "event_v3_decode": _us_per(lambda: [decode_rows(v) for v in v3], n),
    }
    records = [row for v in v3 for row in decode_rows(v)]
    # Batches of records as the window agent stores them: a note's rows share its record's position.
    positioned = [
        [(row, Position("bench.documents", 0, i)) for row in decode_rows(v)] for i, v in enumerate(v3)
    ]
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        state = StateStore(Path(tmp) / "rows.duckdb")
        t = time.perf_counter()
        for offset, r in enumerate(records):  # a row at a time, each as if its own record
            state.apply_batch([(r, Position("bench.documents", 0, offset))])
        row_s = time.perf_counter() - t
        state.close()
        state = StateStore(Path(tmp) / "batch.duckdb")
        t = time.perf_counter()
        for i in range(0, len(positioned), BATCH):
            state.apply_batch([item for rows in positioned[i : i + BATCH] for item in rows])
        batch_s = time.perf_counter() - t
        state.close()
    out["duckdb"] = round(row_s / len(records) * 1e6, 1)
    out["duckdb_batch"] = round(batch_s / len(events) * 1e6, 1)
    out["axes_per_doc"] = round(len(events) / n, 2)
    out["event_json_bytes"] = round(sum(map(len, v1)) / len(v1))
    out["event_v3_bytes"] = round(sum(map(len, v3)) / n)
    out["raw_json_bytes"] = round(sum(map(len, raw_json)) / n)
    out["raw_v2_bytes"] = round(sum(map(len, raw_v2)) / n)
    out["file_bytes"] = round(sum(r.size for r in raws) / n)
    return out


def briefing_scaling(root: Path, paths: Sequence[str], sizes: Sequence[int]) -> dict[str, float]:
    """Seconds of assemble_briefing (the worker's briefing logic, no I/O) over windows of growing size."""
    from datetime import timedelta

    from bench.archive import END, living_documents
    from processors.briefing import assemble_briefing
    from processors.briefing_request import BriefingRequest
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
            BriefingRequest(
                axis=DEFAULT_AXES[0],
                trigger="flush",
                window=window_bounds(END, timedelta(hours=24)),
                generated_at=END,
                zone=SH,
                documents=docs[:n],
                living=living,
                axes=DEFAULT_AXES,
            )
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
