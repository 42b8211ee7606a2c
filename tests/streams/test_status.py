"""`GET /status` from a snapshot: pollers share one, it is taken again after `status_refresh_seconds` or when the
worker's partitions change, and its lag is the reading the lag gauges hold."""

from __future__ import annotations

from pathlib import Path

from aiokafka import TopicPartition

from sinks.metrics import Metrics
from streams.lag_probe import LagProbe, LagReading
from streams.ownership import Ownership
from streams.services import LazyPipeline
from streams.settings import KafkaSettings, Settings
from streams.status import StatusSnapshot
from tests.clocks import ManualClock
from tests.state_support import parsed, put_document

TEXT = "# KV cache\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2% on a long context benchmark.\n"


def _parts(tmp_path: Path) -> tuple[StatusSnapshot, Settings, Ownership, LazyPipeline, LagProbe, ManualClock]:
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        status_refresh_seconds=5.0,
    )
    clock, metrics = ManualClock(), Metrics()
    ownership = Ownership([a.name for a in s.axes], 1)
    ownership.assign([0])
    ownership.mark_ready(0)
    pipeline = LazyPipeline(s, metrics, clock)
    lag = LagProbe(s, metrics, clock)
    return StatusSnapshot(s, pipeline, ownership, lag, clock), s, ownership, pipeline, lag, clock


def _reading(s: Settings, clock: ManualClock, raw: int, documents: int) -> LagReading:
    lag = {
        TopicPartition(s.kafka.topic("raw"), 0): raw,
        TopicPartition(s.kafka.topic("documents"), 0): documents,
        TopicPartition(s.kafka.topic("control"), 0): 0,
    }
    return LagReading(clock.now(), clock.monotonic(), True, lag)


def _docs(body: dict[str, object], axis: str = "inference") -> int:
    return next(int(e["documents"]) for e in body["axes"] if e["axis"] == axis)  # type: ignore[attr-defined]


async def test_pollers_share_a_snapshot_until_it_is_older_than_the_refresh(tmp_path: Path) -> None:
    status, s, _, pipeline, lag, clock = _parts(tmp_path)
    lag.last = _reading(s, clock, 0, 0)
    put_document(pipeline().state, "inference", parsed("inbox/jay/2026-09-27-0900-a.md", TEXT), raw_offset=1)
    first = await status.get()
    assert _docs(first) == 1 and first["snapshot"]["age_seconds"] == 0
    put_document(pipeline().state, "inference", parsed("inbox/tom/2026-09-27-1000-b.md", TEXT), raw_offset=2)
    clock.advance(4)
    again = await status.get()
    # The same snapshot: the new document is not read yet, and the answer says how old it is.
    assert _docs(again) == 1 and again["snapshot"]["taken_at"] == first["snapshot"]["taken_at"]
    assert again["snapshot"]["age_seconds"] == 4
    clock.advance(2)
    lag.last = _reading(s, clock, 0, 0)  # the gauges' timer probed meanwhile: no Kafka round trip here
    fresh = await status.get()
    assert _docs(fresh) == 2 and fresh["snapshot"]["age_seconds"] == 0
    dups = next(e["duplicates"] for e in fresh["axes"] if e["axis"] == "inference")
    assert dups == {"exact": 1, "near": 0}  # what the briefing would mark
    pipeline.opened.state.close()  # type: ignore[union-attr]


async def test_a_new_assignment_is_shown_at_once(tmp_path: Path) -> None:
    status, s, ownership, pipeline, lag, clock = _parts(tmp_path)
    lag.last = _reading(s, clock, 0, 0)
    assert (await status.get())["catching_up"] == []
    ownership.assign([0])  # a rebalance: the partition catches up again
    body = await status.get()
    assert body["catching_up"] == [0] and not body["axes"][0]["ready"]
    pipeline.opened.state.close()  # type: ignore[union-attr]


async def test_the_lag_shown_is_the_reading_the_gauges_hold(tmp_path: Path) -> None:
    status, s, _, pipeline, lag, clock = _parts(tmp_path)
    lag.last = _reading(s, clock, 7, 3)
    body = await status.get()
    assert body["lag"]["parse"] == 7 and body["lag"]["raw"] == {"0": 7}
    assert body["axes"][0]["lag"] == {"documents": 3, "control": 0}
    # A newer probe (the gauges' timer) shows at once, within the same snapshot of the state.
    lag.last = _reading(s, clock, 0, 0)
    later = await status.get()
    assert later["lag"]["parse"] == 0 and later["snapshot"]["taken_at"] == body["snapshot"]["taken_at"]
    lag.last = LagReading(clock.now(), clock.monotonic(), False, error="no broker")
    down = await status.get()
    assert (
        down["lag"] == {**down["lag"], "ok": False, "error": "no broker"} and down["axes"][0]["lag"] is None
    )
    pipeline.opened.state.close()  # type: ignore[union-attr]
