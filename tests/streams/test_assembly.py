"""What a briefing reads from the state: at one moment, though the window agent commits in a thread of its own;
and the worker's memory meanwhile (DuckDB's pool shed between the window's reads and once they are over, and held
low while its notes are read whole)."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from processors.briefing import briefing_of
from processors.increment_search import find_increments
from processors.models import ControlCommand, Document, RawFile
from processors.priorities import priorities
from processors.sources import superseded_entries
from processors.window_scan import scan_window
from sinks.duck import Limits
from sinks.metrics import Metrics
from sinks.offsets import Position
from sinks.state import StateStore
from sinks.window_reads import StoredWindow
from streams.assembly import LOAD_MIB
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings
from tests.clocks import ManualClock
from tests.state_support import EXAMPLES, FILLER, SH, cached_mib
from tests.streams.pipeline_support import ingest

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def _pipeline(tmp_path: Path, memory_mib: int = 96) -> Pipeline:
    s = Settings(
        root=EXAMPLES,
        state_dir=tmp_path,
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )
    p = Pipeline(
        s,
        StateStore(s.state_file, Limits(memory_mib=memory_mib, threads=1)),
        Metrics(),
        clock=ManualClock(END),
    )
    for offset, path in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path_in_root = path.relative_to(EXAMPLES).as_posix()
        ingest(
            p,
            RawFile(path=path_in_root, content=data, size=len(data), mtime=END.timestamp(), sha256=digest),
            offset,
        )
    return p


def _filled(pipeline: Pipeline) -> None:
    db = pipeline.state._db
    db.execute(FILLER)
    db.execute("CHECKPOINT")
    db.execute("SELECT max(s), sum(i) FROM filler").fetchall()  # as a 100k window's first reads fill it
    assert cached_mib(pipeline.state) > 32


def _limit_mib(state: StateStore) -> float:
    row = state._db.execute("SELECT current_setting('memory_limit')").fetchone()
    value, unit = str(row[0] if row else "").split()
    return float(value) * {"MiB": 1, "GiB": 1024}[unit]


def _brief(pipeline: Pipeline) -> None:
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )
    try:
        assert asyncio.run(pipeline.brief(command)) is not None
    finally:
        pipeline.state.close()


def test_the_pool_a_briefings_reads_filled_is_shed_before_its_increments_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streams.assembly.SHED_FROM", 1)  # the examples' window as a large one
    pipeline = _pipeline(tmp_path)
    _filled(pipeline)
    cached: list[float] = []

    def finding(*args: Any) -> Any:
        cached.append(cached_mib(pipeline.state))
        return find_increments(*args)

    monkeypatch.setattr("processors.briefing.find_increments", finding)
    _brief(pipeline)
    assert cached and cached[0] <= 16


def test_the_scan_starts_on_a_shed_pool_and_the_notes_are_read_whole_under_a_lowered_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streams.assembly.SHED_FROM", 1)  # the examples' window as a large one
    # At 100k the scan's listing (~200 MiB) and the notes read whole (~150 MiB of DuckDB's blocks at the full
    # limit) come on top of what the reads before them cached: the worker's peak.
    pipeline = _pipeline(tmp_path, memory_mib=192)
    _filled(pipeline)
    seen = _reads_of_a_briefing(pipeline, monkeypatch)
    at = [what for what, _, _ in seen].index("scan")
    _, cached, limit = seen[at]
    assert cached <= 16 and limit == 192
    # The briefing's notes, read whole after the scan: the pool shed again, its limit lowered meanwhile.
    assert [(what, limit) for what, _, limit in seen[at + 1 :]] == [("load", LOAD_MIB)]
    assert seen[at + 1][1] <= 16


def test_notes_that_cannot_be_read_whole_under_the_lowered_limit_are_read_under_the_full_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streams.assembly.SHED_FROM", 1)  # the examples' window as a large one
    pipeline = _pipeline(tmp_path, memory_mib=192)
    limits: list[float] = []

    def loading(window: StoredWindow, paths: Sequence[str]) -> list[Document]:
        limits.append(_limit_mib(pipeline.state))
        if paths and limits[-1] < 192:  # as DuckDB fails to pin a large note's blocks
            raise duckdb.OutOfMemoryException("failed to pin block of size 256.0 KiB")
        return load(window, paths)

    load = StoredWindow.load
    monkeypatch.setattr(StoredWindow, "load", loading)
    _brief(pipeline)
    assert limits[-2:] == [LOAD_MIB, 192]


def test_a_small_windows_reads_keep_the_pool_and_its_notes_are_read_at_the_full_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Below SHED_FROM sources shedding saves little memory and costs the re-reads (~0.06 s at 10k sources).
    pipeline = _pipeline(tmp_path, memory_mib=192)
    _filled(pipeline)
    seen = _reads_of_a_briefing(pipeline, monkeypatch)
    at = [what for what, _, _ in seen].index("scan")
    assert [(what, limit) for what, _, limit in seen[at:]] == [("scan", 192), ("load", 192)]
    assert min(cached for _, cached, _ in seen[at:]) > 32  # what the reads before cached is still there


def test_no_batch_commits_between_a_briefings_reads_of_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window is pinned, and the living documents, rejections and history read, with no write in between: a
    note edited meanwhile would show as both a source and superseded, or a source and rejected."""
    pipeline = _pipeline(tmp_path)
    window = StateStore.window
    waited: list[bool] = []
    stored: list[int | None] = []

    def store(state: StateStore) -> None:  # the window agent's next batch, in its thread
        state.mark_applied(Position("p.documents", 0, 9))
        stored.append(state.applied_offset("p.documents", 0))

    def writes_wait(state: StateStore, *args: Any) -> StoredWindow:
        source = window(state, *args)
        writer = threading.Thread(target=store, args=(state,))
        writer.start()
        writer.join(timeout=0.3)
        waited.append(writer.is_alive())
        monkeypatch.setattr(StateStore, "window", window)
        return source

    monkeypatch.setattr(StateStore, "window", writes_wait)
    _brief(pipeline)
    assert waited == [True]  # the commit waited until the briefing's reads were done
    assert stored == [9]  # and then went on


def test_the_pool_the_records_write_filled_is_shed_before_the_briefing_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 100k the record's write and the texts' packing left ~150 MiB of blocks in DuckDB's pool, under the
    # message parts the briefing is sent in (~4 x 24 MiB at once in the producer): the live worker's peak.
    pipeline = _pipeline(tmp_path, memory_mib=192)
    _filled(pipeline)
    record = StateStore.record_emission

    def recording(state: StateStore, *args: Any, **kwargs: Any) -> bool:
        done = record(state, *args, **kwargs)
        state._db.execute("SELECT max(s), sum(i) FROM filler").fetchall()  # as the 100k write's blocks
        return done

    monkeypatch.setattr(StateStore, "record_emission", recording)
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )
    try:
        assert asyncio.run(pipeline.brief(command)) is not None
        assert cached_mib(pipeline.state) <= 16
    finally:
        pipeline.state.close()


def test_a_briefing_cancelled_mid_read_is_cancelled_and_closes_its_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker stopping mid-briefing: the cancellation comes out (not DuckDB's "connection is busy" from closing
    the cursor its thread still reads on), and the window's cursor is closed, its read interrupted."""
    pipeline = _pipeline(tmp_path)
    reading = threading.Event()
    sources: list[StoredWindow] = []

    def long_read(request: Any) -> Any:  # a 100k window's reads, in the briefing's thread
        sources.append(request.source)
        reading.set()
        request.source._db.execute(
            "SELECT sum(hash(a.range * b.range)) FROM range(100000) a, range(100000) b"
        )

    monkeypatch.setattr("streams.assembly.read_window", long_read)
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )

    async def cancelled_mid_read() -> None:
        task = asyncio.ensure_future(pipeline.brief(command))
        assert await asyncio.to_thread(reading.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(cancelled_mid_read())
        with pytest.raises(duckdb.ConnectionException, match="closed"):
            sources[0]._db.execute("SELECT 1")
    finally:
        pipeline.state.close()


@pytest.mark.parametrize(
    ("stop", "why"),
    [
        (True, " by the worker's stop: its command, unacknowledged, is briefed again after the restart"),
        # It said the worker had stopped, and that the command would be briefed after a restart not coming.
        (
            False,
            ", not by the worker's stop (its agent was cancelled): nothing of it is recorded",
        ),
    ],
    ids=["the stop", "not the stop"],
)
def test_a_cancelled_briefing_ends_its_thread_at_its_next_read_and_says_who_cancelled_it(
    stop: bool, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The task's cancellation never reached the briefing's thread: it briefed on, past the worker's stop, which then
    waited for it (or exited hard at 15 s). Now it ends at its next read, and one line names the briefing."""
    pipeline = _pipeline(tmp_path)
    reading, ended = threading.Event(), threading.Event()

    def long_read(request: Any) -> Any:  # a large window's scan in the briefing's thread, reading by chunks
        reading.set()
        try:
            for _ in range(3000):
                request.between_reads()
                threading.Event().wait(0.01)
        finally:
            ended.set()

    monkeypatch.setattr("streams.assembly.read_window", long_read)
    try:
        asyncio.run(_brief_then_cancel(pipeline, reading, ended, stop))
    finally:
        pipeline.state.close()
    lines = [r.getMessage() for r in caplog.records if "cancelled" in r.getMessage()]
    assert lines == [f"the flush briefing of inference ending {END.isoformat()} was cancelled{why}"]


def test_a_briefing_cancelled_while_packed_ends_its_thread_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packing a 100k briefing's texts is seconds of a thread's CPU: cancelled by the stop, it ends at its next
    piece, and nothing is recorded (the restart briefs the command again)."""
    pipeline = _pipeline(tmp_path)
    packing, ended = threading.Event(), threading.Event()

    def slow_pieces(briefing: Any) -> Any:  # a large briefing's JSON, piece by piece
        try:
            for _ in range(3000):
                packing.set()
                threading.Event().wait(0.01)
                yield "{}"
        finally:
            ended.set()

    monkeypatch.setattr("streams.pipeline.json_pieces", slow_pieces)
    try:
        asyncio.run(_brief_then_cancel(pipeline, packing, ended))
        assert pipeline.state.emission_record("inference", END, "flush") is None
    finally:
        pipeline.state.close()


def test_a_stop_begun_while_the_briefing_is_built_ends_it_at_its_next_step_and_leaves_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The build (`briefing_of`, seconds at 100k) ran to its end: the stop waited 8 s for the command's answer, then
    cancelled it, then waited for the build. Now the stop's beginning ends the build at its next step, nothing
    recorded, and the command's record is left unacknowledged (the stop does not wait for it)."""
    pipeline = _pipeline(tmp_path)
    building, ended, after = threading.Event(), threading.Event(), []

    def slow_step(*args: Any) -> Any:  # one of a 100k window's steps that reads nothing more of the state
        building.set()
        threading.Event().wait(0.5)
        return superseded_entries(*args)

    def last_step(*args: Any) -> Any:
        after.append(args)
        return priorities(*args)

    def build(*args: Any) -> Any:
        try:
            return briefing_of(*args)
        finally:
            ended.set()

    monkeypatch.setattr("processors.briefing.superseded_entries", slow_step)
    monkeypatch.setattr("processors.briefing.priorities", last_step)
    monkeypatch.setattr("streams.assembly.briefing_of", build)
    try:
        took = asyncio.run(_brief_then_stop(pipeline, building, ended))
        assert pipeline.state.emission_record("inference", END, "flush") is None
    finally:
        pipeline.state.close()
    assert took < 3, f"the build went on {took:.1f}s after the stop began"
    assert after == [], "the build went on to its end"
    assert pipeline.build_stop.left == {("predigest.control", 0, 7)}
    assert any("was cancelled by the worker's stop" in r.getMessage() for r in caplog.records)


async def _brief_then_stop(pipeline: Pipeline, building: threading.Event, ended: threading.Event) -> float:
    """A flush briefing whose build the worker's stop begins during; how long its thread went on after."""
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )
    task = asyncio.ensure_future(pipeline.brief(command, Position("predigest.control", 0, 7)))
    assert await asyncio.to_thread(building.wait, 60)
    began = time.monotonic()
    pipeline.build_stop.begin()
    assert await asyncio.to_thread(ended.wait, 30)
    took = time.monotonic() - began
    await asyncio.sleep(0.1)
    assert not task.done(), "the command's answer ended: the control agent would acknowledge it"
    task.cancel()  # the stop cancels the agents once its wait is over
    with pytest.raises(asyncio.CancelledError):
        await task
    return took


async def _brief_then_cancel(
    pipeline: Pipeline, started: threading.Event, ended: threading.Event, stop: bool = True
) -> None:
    """A flush briefing cancelled once `started`, as the worker's stop cancels it (begun, then the agent cancelled),
    or without the `stop`; its thread must set `ended` within 2 s."""
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="t"
    )
    task = asyncio.ensure_future(pipeline.brief(command))
    assert await asyncio.to_thread(started.wait, 60)
    if stop:
        pipeline.build_stop.begin()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Before asyncio.run's end, which waits for its threads.
    assert await asyncio.to_thread(ended.wait, 2), "the briefing's thread went on after its cancellation"


def _reads_of_a_briefing(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, float, float]]:
    """A briefing's window scans and notes' reads, each with DuckDB's cached MiB and its limit as it began."""
    seen: list[tuple[str, float, float]] = []

    def scanning(*args: Any) -> Any:
        seen.append(("scan", cached_mib(pipeline.state), _limit_mib(pipeline.state)))
        return scan_window(*args)

    def loading(window: StoredWindow, paths: Sequence[str]) -> list[Document]:
        seen.append(("load", cached_mib(pipeline.state), _limit_mib(pipeline.state)))
        return load(window, paths)

    load = StoredWindow.load
    monkeypatch.setattr("processors.briefing.scan_window", scanning)
    monkeypatch.setattr(StoredWindow, "load", loading)
    _brief(pipeline)
    return seen
