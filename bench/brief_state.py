"""Time one flush briefing over a stopped worker's DuckDB state: `python -m bench.brief_state SETTINGS AXIS END`."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from processors.models import ControlCommand
from sinks.clock import SYSTEM_CLOCK
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams import heap
from streams.emission import Emission
from streams.pipeline import Pipeline
from streams.services import open_pipeline
from streams.worker_process import load_dumped_settings


async def main(cfg: Path, axis: str, end: datetime) -> dict[str, object]:
    settings = load_dumped_settings(cfg)
    heap.keep_for_ingest()  # as the worker's process from its start: its briefing's heap is then the worker's
    pipeline = open_pipeline(settings, Metrics(), SYSTEM_CLOCK)  # as the worker opens it
    try:
        return await _briefed(pipeline, axis, end)
    finally:
        await close_pipeline(pipeline)


async def _briefed(pipeline: Pipeline, axis: str, end: datetime) -> dict[str, object]:
    state = pipeline.state
    command = ControlCommand(
        axis=axis, trigger="flush", end=end, requested_at=datetime.now(UTC), request_id="bench"
    )
    t = time.perf_counter()
    emission = await pipeline.brief(command)
    if emission is not None:  # the files too, as the control agent writes them
        pipeline.write_files(emission)
    seconds = time.perf_counter() - t
    sources = recorded_sources(state, emission)
    return {"briefing_s": round(seconds, 2), "briefing_sources": sources}


async def close_pipeline(pipeline: Pipeline) -> None:
    """As the worker's stop closes it: its state, then its enricher (the arXiv cache's file, an API client)."""
    try:
        pipeline.state.close()
    finally:
        if pipeline.enricher is not None:
            await pipeline.enricher.aclose()


def recorded_sources(state: StateStore, emission: Emission | None) -> int:
    """The briefing's source count as recorded: parsing its JSON back (~0.3 GiB at 100k) would be the peak."""
    if emission is None:
        return 0
    return next((e.sources for e in state.emissions.entries() if e.basename == emission.basename), 0)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1]), sys.argv[2], datetime.fromisoformat(sys.argv[3])))))
