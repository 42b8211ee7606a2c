"""`GET /status` from a snapshot: pollers share one, it is taken again after `status_refresh_seconds` or when the
worker's partitions change, and its lag is the reading the lag gauges hold."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from aiokafka import TopicPartition

from processors.models import RawFile
from sinks.metrics import Metrics
from streams.lag_probe import LagProbe, LagReading
from streams.ownership import Ownership
from streams.pipeline import route_params
from streams.services import LazyPipeline
from streams.settings import KafkaSettings, Settings
from streams.status import StatusSnapshot
from streams.status_table import merge, render
from tests.clocks import ManualClock
from tests.state_support import parsed, put_document, raw_file, route_into

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


async def test_each_axis_counts_its_refused_files_and_names_the_newest_reason_in_the_table(
    tmp_path: Path,
) -> None:
    status, s, _, pipeline, lag, clock = _parts(tmp_path)
    lag.last = _reading(s, clock, 0, 0)
    state, params = pipeline().state, route_params(s)
    assert (await status.get())["axes"][0]["refused"] == {"count": 0, "newest": None}
    blob, link = "inbox/jay/2026-09-27-0900-blob.md", "inbox/tom/2026-09-27-1000-link.md"
    route_into(state, raw_file(blob, b"\x00\x01binary"), params, clock.now(), 1)
    clock.advance(60)
    seen = clock.now()
    link_file = RawFile(
        path=link, content=b"", size=9, mtime=0.0, sha256="refused-symlink",
        refused="it is a symlink (never followed)", refused_code="symlink",
    )  # fmt: skip
    route_into(state, link_file, params, seen, 2)
    clock.advance(6)
    body = await status.get()
    newest = {"path": link, "reason_code": "symlink", "reason": f"{link}: it is a symlink (never followed)"}
    for entry in body["axes"]:  # a refusal goes to every axis: the file's kind is never read
        refused = entry["refused"]
        assert refused["count"] == 2 and datetime.fromisoformat(refused["newest"]["seen_at"]) == seen
        assert {k: v for k, v in refused["newest"].items() if k != "seen_at"} == newest
    # The table says it in the configured language, the JSON by code.
    table = render(merge(s, [{**body, "worker": "http://127.0.0.1:6066"}]), s.tz, "zh")
    inference = next(line for line in table.splitlines() if line.startswith("inference"))
    assert "2 (newest: 符号链接, 09-27 22:31)" in inference
    # Fixed (a readable version since): no longer refused, and the newest refusal is the one still standing.
    route_into(state, raw_file(link, b"# link\n\nnow a note\n"), params, clock.now(), 3)
    clock.advance(6)
    after = (await status.get())["axes"][0]["refused"]
    assert (
        after["count"] == 1 and after["newest"]["path"] == blob and after["newest"]["reason_code"] == "binary"
    )
    assert "1 (newest: binary file (NUL bytes), 09-27 22:30)" in render(
        merge(s, [{**(await status.get()), "worker": "w"}]), s.tz, "en"
    )
    pipeline.opened.state.close()  # type: ignore[union-attr]
