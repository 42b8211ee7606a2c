"""`/readyz` of the worker, check by check: each failing one is named, and the readiness gauge follows."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from sinks.errors import StateMemoryError
from sinks.metrics import Metrics
from sinks.state_reader import StateReader
from streams.lag_probe import LagProbe, LagReading
from streams.ownership import Ownership
from streams.readiness import Readiness
from streams.services import LazyPipeline
from streams.settings import KafkaSettings, Settings
from streams.state_guard import StateGuard
from streams.state_sync import StateSync
from tests.clocks import ManualClock


def _parts(
    tmp_path: Path,
) -> tuple[Readiness, Ownership, LazyPipeline, StateGuard, LagProbe, Metrics, ManualClock]:
    s = Settings(
        root=tmp_path / "root", state_dir=tmp_path / "state", kafka=KafkaSettings(bootstrap="127.0.0.1:9")
    )
    clock, metrics = ManualClock(), Metrics()
    ownership = Ownership([a.name for a in s.axes], 1)
    pipeline = LazyPipeline(s, metrics, clock)
    guard = StateGuard(s, pipeline, StateSync(s, pipeline, ownership, metrics, clock), metrics, clock)
    lag = LagProbe(s, metrics, clock)
    return (
        Readiness(s, ownership, pipeline, guard, lag, metrics),
        ownership,
        pipeline,
        guard,
        lag,
        metrics,
        clock,
    )


def _kafka(lag: LagProbe, clock: ManualClock, ok: bool) -> None:
    """A reading as the probe leaves it, fresh, so that /readyz does not ask the (absent) broker again."""
    lag.last = LagReading(clock.now(), clock.monotonic(), ok, error=None if ok else "no broker")


async def test_each_check_that_fails_is_named_until_all_pass(tmp_path: Path) -> None:
    readiness, ownership, pipeline, guard, lag, metrics, clock = _parts(tmp_path)
    _kafka(lag, clock, False)
    ready, body = await readiness.report()
    # Started, never assigned, the state not open yet, Kafka away.
    assert not ready and body["not_ready"] == ["kafka", "assignment", "state"]
    assert body["checks"]["kafka"]["error"] == "no broker"
    assert metrics.registry.get_sample_value("predigest_ready") == 0

    _kafka(lag, clock, True)
    ownership.assign([0])
    pipeline()  # an agent opened the state
    ready, body = await readiness.report()
    assert body["not_ready"] == ["catch_up"] and body["checks"]["catch_up"]["catching_up"] == [0]

    ownership.mark_ready(0)
    ready, body = await readiness.report()
    assert ready and body == {**body, "status": "ready", "not_ready": []}
    assert metrics.registry.get_sample_value("predigest_ready") == 1

    guard.problem = "the state file worker.duckdb is shorter than its blocks (truncated)"
    ready, body = await readiness.report()
    assert body["not_ready"] == ["state"] and "truncated" in body["checks"]["state"]["problem"]
    pipeline.opened.state.close()  # type: ignore[union-attr]


async def test_a_worker_assigned_no_partition_is_ready(tmp_path: Path) -> None:
    readiness, ownership, pipeline, _, lag, _, clock = _parts(tmp_path)
    _kafka(lag, clock, True)
    ownership.assign([])  # more workers than partitions: nothing to own, nothing to catch up
    pipeline()
    assert (await readiness.report())[0]
    pipeline.opened.state.close()  # type: ignore[union-attr]


async def test_a_stale_kafka_reading_is_probed_again(tmp_path: Path) -> None:
    readiness, _, _, _, lag, _, clock = _parts(tmp_path)
    _kafka(lag, clock, True)
    first = lag.last
    clock.advance(60)  # older than the readiness check accepts: it asks the broker, which is not there
    _, body = await readiness.report()
    assert lag.last is not first and body["checks"]["kafka"]["ok"] is False


async def test_a_slightly_old_kafka_reading_answers_at_once_while_a_new_one_is_probed(tmp_path: Path) -> None:
    readiness, _, _, _, lag, _, clock = _parts(tmp_path)
    _kafka(lag, clock, True)
    first = lag.last
    clock.advance(15)  # older than a reading may be, younger than three times that
    _, body = await readiness.report()
    assert body["checks"]["kafka"]["ok"] is True and lag.last is first  # answered without waiting on Kafka
    await lag.get(max_age=0.0)  # joins the probe started in the background (the broker is not there)
    assert lag.last is not first and lag.last is not None and not lag.last.ok


async def test_a_state_too_large_to_check_in_its_memory_is_reported_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What DuckDB's OutOfMemoryException in the check becomes (tests/sinks/test_state_limits.py makes a real one).
    readiness, ownership, pipeline, guard, lag, metrics, clock = _parts(tmp_path)
    _kafka(lag, clock, True)
    ownership.assign([0])
    ownership.mark_ready(0)
    state = pipeline().state
    too_large = StateMemoryError(
        "cannot read the state file within its memory; raise duckdb.memory_limit_mib"
    )

    def check(_: StateReader) -> None:
        raise too_large

    monkeypatch.setattr(StateReader, "check", check)
    await guard.check()
    ready, body = await readiness.report()
    assert not ready and "duckdb.memory_limit_mib" in body["checks"]["state"]["problem"]
    assert guard.replaced is None and pipeline.opened is not None and pipeline.opened.state is state
    assert not [p for p in (tmp_path / "state").iterdir() if "unreadable" in p.name]  # nothing set aside
    refused = metrics.registry.get_sample_value(
        "predigest_state_memory_refused_total", {"operation": "check"}
    )
    assert refused == 1  # what the PredigestStateOutOfMemory alert sees
    state.close()


async def test_the_state_check_leaves_the_event_loop_free_while_a_batch_commits(tmp_path: Path) -> None:
    """The periodic check opens its reader in its thread: opened on the event loop, it would stop heartbeats,
    fetches and HTTP until the window agent's transaction (in its thread, holding the state's lock) commits."""
    _, _, pipeline, guard, _, _, _ = _parts(tmp_path)
    state = pipeline().state
    committing, done = threading.Event(), threading.Event()

    def long_commit() -> None:
        with state.unchanged():  # what a store holds for its whole transaction
            committing.set()
            done.wait(20)

    store = threading.Thread(target=long_commit)
    store.start()
    committing.wait(10)
    try:
        checking = asyncio.create_task(guard.check())
        await asyncio.sleep(0.3)
        # Back from the sleep while the commit still holds the state: the loop ran while the check waited for it
        # in its thread (blocked, the loop would be back only once the commit ended, 20 s on). Was a 2 s bound.
        assert store.is_alive() and not checking.done()
    finally:
        done.set()
    await checking
    store.join()
    assert guard.problem is None and guard.checked_at is not None
    state.close()
