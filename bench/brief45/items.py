"""One 10k flush briefing in process, itemised by stage: wall, thread CPU and process CPU of each (brief45).

    python -m bench.brief_memory build --n 10000 --state /tmp/b45/s10k.duckdb   # once
    python -m bench.brief45.items --state /tmp/b45/s10k.duckdb [--fine]       # a fresh process per run

The state is copied per run and opened as the worker opens it (`bench.brief_memory.open_briefing`); the clock is
fixed, so the files' SHA-256 compare across trees. Each stage is the named function's calls, inclusive of the
stages called within it; `--fine` also times the scan's per-row steps (~1 µs a call of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import Any

import processors.briefing as pb
import processors.discrepancies as dx
import processors.increment_search as ins
import streams.assembly as sa
import streams.pipeline as sp
from bench.archive import END
from bench.brief_memory import AXIS
from bench.brief_state import close_pipeline
from processors.models import ControlCommand
from processors.relevance import AxisSpace, Scorer
from processors.sources import SourceListing
from sinks import window_reads as wr
from sinks.metrics import Metrics
from sinks.state import StateStore
from sinks.window_reads import StoredWindow
from streams import heap
from streams.assembly import Assembly
from streams.pipeline import Pipeline
from streams.services import open_pipeline
from streams.settings import Settings

AT = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
STAGES: dict[str, list[float]] = {}  # name: [calls, wall, thread CPU, process CPU]


class FixedClock:
    """The wall time fixed (the briefing's `generated_at`), the rest the system's."""

    def now(self) -> datetime:
        return AT

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _add(name: str, started: tuple[float, float, float]) -> None:
    s = STAGES.setdefault(name, [0, 0.0, 0.0, 0.0])
    s[0] += 1
    s[1] += time.perf_counter() - started[0]
    s[2] += time.thread_time() - started[1]
    s[3] += time.process_time() - started[2]


def _now() -> tuple[float, float, float]:
    return time.perf_counter(), time.thread_time(), time.process_time()


def timed(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        started = _now()
        try:
            return f(*args, **kwargs)
        finally:
            _add(name, started)

    return run


def timed_pieces(name: str, f: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """A generator's steps timed, not the consumer's work between them."""

    @wraps(f)
    def run(*args: Any, **kwargs: Any) -> Iterator[Any]:
        it = f(*args, **kwargs)
        while True:
            started = _now()
            try:
                piece = next(it)
            except StopIteration:
                _add(name, started)
                return
            _add(name, started)
            yield piece

    return run


def _patch(owner: object, attr: str, name: str, pieces: bool = False) -> None:
    f = getattr(owner, attr)
    setattr(owner, attr, (timed_pieces if pieces else timed)(name, f))


def install(fine: bool) -> None:
    for attr in ("unreadable", "latest_baseline", "window", "living_documents", "rejections"):
        _patch(StateStore, attr, f"1 before: {attr}")
    _patch(Assembly, "_history", "1 before: history (briefings, own baselines)")
    _patch(StoredWindow, "arxiv_ids", "1 before: arxiv_ids")
    _patch(sa, "read_window", "2 read_window")
    _patch(StoredWindow, "size", "2 . size")
    _patch(StoredWindow, "duplicates", "2 . duplicates")
    _patch(StoredWindow, "statistics", "2 . statistics")
    _patch(StoredWindow, "_frequencies", "2 . frequencies (in AxisSpace.of)")
    of = vars(AxisSpace)["of"].__func__  # a classmethod: wrapped as one
    AxisSpace.of = classmethod(timed("2 . AxisSpace.of", of))  # type: ignore[assignment]
    _patch(StoredWindow, "superseded", "2 . superseded")
    _patch(pb, "scan_window", "2 . scan_window (rows fetched, weighed, listed)")
    _patch(pb, "read_whole", "2 . read_whole")
    _patch(StoredWindow, "titles", "2 . titles")
    _patch(pb, "anchor_ids", "2 . anchor_ids")
    _patch(sa, "briefing_of", "3 briefing_of")
    _patch(pb, "_titles_and_screening", "3 . titles and screening")
    _patch(pb, "find_increments", "3 . increments")
    _patch(SourceListing, "accounts", "3 . accounts")
    _patch(pb, "superseded_entries", "3 . superseded entries")
    _patch(dx, "version_conflicts", "3 . version conflicts")
    _patch(dx, "flagged_and_unsourced", "3 . flagged and unsourced")
    _patch(dx, "number_items", "3 . number items")
    _patch(dx, "mark_suspects", "3 . mark suspects")
    _patch(pb, "arxiv_entries", "3 . arxiv entries")
    _patch(pb, "priorities", "3 . priorities")
    _patch(pb, "Briefing", "3 . Briefing model")
    _patch(Pipeline, "_packed", "4 packed")
    _patch(sp, "markdown_pieces", "4 . markdown pieces", pieces=True)
    _patch(sp, "json_pieces", "4 . compact json pieces", pieces=True)
    _patch(StateStore, "record_emission", "5 record_emission")
    _patch(StateStore, "shed_cache", "5 shed_cache")
    _patch(Pipeline, "write_files", "6 write_files")
    _patch(ins, "units_of", "3 . . units_of")
    _patch(AxisSpace, "learn_texts", "3 . . learn_texts")
    _patch(ins, "weigh_units", "3 . . weigh_units")
    _patch(ins, "cluster_units", "3 . . cluster_units")
    _patch(ins, "evaluate", "3 . . evaluate")
    _patch(ins, "build", "3 . . build")
    if fine:
        _patch(wr, "load_summary", "2 . . load_summary")
        _patch(Scorer, "weigh", "2 . . Scorer.weigh")
        _patch(SourceListing, "add", "2 . . SourceListing.add")
        _patch(wr, "from_json", "2 . . hits from_json")


async def _run(state_dir: Path, out: Path) -> dict[str, Any]:
    pipeline = open_pipeline(Settings(state_dir=state_dir, out_dir=out), Metrics(), FixedClock())
    try:
        command = ControlCommand(axis=AXIS, trigger="flush", end=END, requested_at=AT, request_id="bench")
        started = _now()
        emission = await pipeline.brief(command)
        assert emission is not None
        files = pipeline.write_files(emission)
        _add("0 whole (brief + files)", started)
        return {p.suffix: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files)}
    finally:
        await close_pipeline(pipeline)


def run(state_file: Path, fine: bool) -> dict[str, Any]:
    heap.keep_for_ingest()
    install(fine)
    with tempfile.TemporaryDirectory(prefix="brief45-") as tmp:
        copy = Path(tmp) / "worker.duckdb"
        copy.write_bytes(state_file.read_bytes())
        hashes = asyncio.run(_run(copy.parent, Path(tmp) / "out"))
    stages = {k: [int(v[0]), *(round(x * 1000, 1) for x in v[1:])] for k, v in sorted(STAGES.items())}
    return {"sha256": hashes, "stages_ms": stages}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--fine", action="store_true")
    args = p.parse_args()
    json.dump(run(args.state, args.fine), sys.stdout)
    print()


if __name__ == "__main__":
    main()
