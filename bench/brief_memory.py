"""A briefing over a large stored state, in process: its seconds and the memory it adds, no Kafka.

    python -m bench.brief_memory build --n 100000 --state /tmp/s100k.duckdb   # parse the seeded archive, store it
    python -m bench.brief_memory brief --state /tmp/s100k.duckdb              # one flush briefing, measured

`build` parses the notes of the seeded archive (bench/archive.py) in two processes and applies their documents
records to a state file through `StateStore.apply_batch`, as the window agent does. `brief` opens that state
in a fresh process as the worker opens it (its DuckDB limits, its arXiv enricher) and runs `Pipeline.brief`
(the worker's briefing, files included) once: wall and CPU seconds, the resident set before, and the peak while
briefing (VmHWM, reset just before it starts).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from bench.archive import END, SH, Generator, living_documents, work_queue
from bench.brief_state import close_pipeline, recorded_sources
from processors.fan_out import route_read
from processors.models import ControlCommand, RawFile
from processors.wire import DocumentRecord, decode_rows, encode_events
from sinks.clock import SYSTEM_CLOCK
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams import heap
from streams.pipeline import Pipeline
from streams.services import open_pipeline
from streams.settings import DEFAULT_AXES, Settings

BATCH = 500  # records per apply_batch, the worker's batch_records
CHUNK = 250  # notes per parse task
AXIS = "inference"


def _notes(n: int) -> Iterator[tuple[str, str]]:
    gen = Generator()
    for i in range(n):
        rel, content, _ = gen.note(i)
        yield rel, content
    yield from living_documents().items()
    yield work_queue()


def _encoded(chunk: list[tuple[int, str, str]]) -> list[bytes]:
    """The documents records of a chunk of notes, as the parse stage sends them."""
    seen = datetime.now(UTC)
    out: list[bytes] = []
    for offset, rel, content in chunk:
        data = content.encode()
        raw = RawFile(path=rel, content=data, size=len(data), mtime=END.timestamp(), sha256=_sha(data))
        events = route_read(raw, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=seen, raw_offset=offset)[0]
        out.extend(value for _, value in encode_events(events, {}))  # one partition
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chunks(n: int) -> Iterator[list[tuple[int, str, str]]]:
    chunk: list[tuple[int, str, str]] = []
    for offset, (rel, content) in enumerate(_notes(n)):
        chunk.append((offset, rel, content))
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _positioned(values: list[bytes], offset: int) -> list[tuple[DocumentRecord, Position]]:
    """Each record's rows (one per axis), positioned as the window agent positions them: a row number each, or
    the state keeps only a record's first row."""
    return [
        (row, Position("bench.documents", 0, offset + j, k))
        for j, v in enumerate(values)
        for k, row in enumerate(decode_rows(v))
    ]


def build(n: int, state_file: Path, workers: int) -> dict[str, object]:
    """Parse n notes of the archive and store them; the state file is made anew."""
    for p in (state_file, state_file.with_name(state_file.name + ".wal")):
        p.unlink(missing_ok=True)
    state = StateStore(state_file)
    started = time.perf_counter()
    offset = 0
    pending: list[bytes] = []
    with ProcessPoolExecutor(workers) as pool:
        for values in pool.map(_encoded, _chunks(n)):
            pending.extend(values)
            while len(pending) >= BATCH:
                batch, pending = pending[:BATCH], pending[BATCH:]
                state.apply_batch(_positioned(batch, offset))
                offset += len(batch)
    if pending:
        state.apply_batch(_positioned(pending, offset))
        offset += len(pending)
    state.close()
    return {"notes": n, "records": offset, "build_s": round(time.perf_counter() - started, 1)}


def _status(field: str) -> int:
    m = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    return int(m.group(1)) // 1024 if m else 0


def open_briefing(state_dir: Path, out: Path) -> Pipeline:
    """The worker's pipeline over `state_dir`'s state, opened as the worker opens it: within its DuckDB limits,
    with its arXiv enricher (streams.services.open_pipeline); the settings are the environment's."""
    return open_pipeline(Settings(state_dir=state_dir, out_dir=out), Metrics(), SYSTEM_CLOCK)


async def _brief(state_file: Path, out: Path) -> dict[str, object]:
    pipeline = open_briefing(state_file.parent, out)
    try:
        return await _measured(pipeline)
    finally:
        await close_pipeline(pipeline)


async def _measured(pipeline: Pipeline) -> dict[str, object]:
    """One flush briefing of `pipeline`, its files written: seconds, CPU, resident set before and peak."""
    state, duck_settings = pipeline.state, pipeline.settings.duckdb
    command = ControlCommand(
        axis=AXIS, trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="bench"
    )
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from the current resident set
    wall, cpu = time.perf_counter(), time.process_time()
    emission = await pipeline.brief(command)
    if emission is not None:
        pipeline.write_files(emission)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = _status("VmHWM")
    sources = recorded_sources(state, emission)
    return {
        "duckdb_memory_limit_mib": duck_settings.memory_limit_mib,
        "duckdb_threads": duck_settings.threads,
        "sources": sources,
        "briefing_s": round(wall, 2),
        "briefing_cpu_s": round(cpu, 2),
        "rss_before_mib": before,
        "peak_rss_mib": peak,
        "added_mib": peak - before,
    }


def brief(state_file: Path) -> dict[str, object]:
    """One flush briefing of the state (a copy: the emission it records must not stay for the next run)."""
    heap.keep_for_ingest()  # the worker's heap from its start (streams.worker_main): a briefing then runs with
    # glibc's small thresholds (streams.heap.briefing_heap), without it with glibc's dynamic ones
    with tempfile.TemporaryDirectory(prefix="brief-memory-") as tmp:
        copy = Path(tmp) / "worker.duckdb"  # where the settings put it
        copy.write_bytes(state_file.read_bytes())
        return asyncio.run(_brief(copy, Path(tmp) / "out"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("what", choices=("build", "brief"))
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    result = build(args.n, args.state, args.workers) if args.what == "build" else brief(args.state)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
