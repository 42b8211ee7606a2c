"""The emission record is the source of truth: a crash anywhere re-emits the same bytes, never a new briefing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.models import Briefing, ControlCommand, Trigger
from sinks.files import pretty_json
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.emission import Emission
from streams.pipeline import Pipeline
from tests.clocks import ManualClock
from tests.state_support import as_previous_version
from tests.streams.pipeline_support import ingest as ingest_raw
from tests.streams.pipeline_support import offline_pipeline, raw_file

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def ticking() -> ManualClock:
    """A clock that moves a minute per reading, so a re-assembled briefing would carry a new generated_at."""
    return ManualClock(END + timedelta(minutes=10), tick=timedelta(minutes=1))


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    p = offline_pipeline(tmp_path, ticking())
    yield p
    p.state.close()


def ingest(p: Pipeline, path: str, text: str) -> None:
    ingest_raw(p, raw_file(path, text))


def command(trigger: Trigger = "close") -> ControlCommand:
    return ControlCommand(axis="inference", trigger=trigger, end=END, requested_at=END, request_id="r")


async def emit(p: Pipeline, trigger: Trigger = "close") -> Emission:
    """Record the briefing, then write its files from the record, as the control agent does."""
    emission = await p.brief(command(trigger))
    assert emission is not None
    p.write_files(emission)
    return emission


def files(p: Pipeline) -> dict[str, bytes]:
    folder = p.settings.out_dir / "inference"
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())} if folder.exists() else {}


def counter(p: Pipeline, name: str, trigger: str = "close") -> float | None:
    return p.metrics.registry.get_sample_value(name, {"axis": "inference", "trigger": trigger})


async def test_a_crash_between_record_and_files_re_emits_the_recorded_bytes(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(pipeline, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving arXiv:2609.23130\n")

    def crash(*args: object) -> list[Path]:
        raise OSError("disk full")

    monkeypatch.setattr(pipeline.files, "ensure_made", crash)
    with pytest.raises(OSError):
        await emit(pipeline)
    monkeypatch.undo()
    assert files(pipeline) == {}
    recorded = pipeline.state.emission_record("inference", END, "close")
    assert recorded is not None and recorded.delivered_at is None

    # A document arriving before the replay does not change what was recorded.
    ingest(pipeline, "inbox/tom/2026-09-27-1100-late.md", "# SGLang 推理\nspeculative decoding serving\n")
    replay = await emit(pipeline)
    assert replay.json_bytes() == recorded.briefing_json
    assert not replay.delivered  # never acknowledged by the topic: the control agent sends it now
    on_disk = files(pipeline)
    assert on_disk["2026-09-27-inference-e1prep.json"] == pretty_json(recorded.briefing_json).encode()
    assert on_disk["2026-09-27-inference-e1prep.md"] == recorded.markdown
    assert [s.path for s in replay.briefing.sources] == ["inbox/jay/2026-09-27-1000-kv.md"]
    assert counter(pipeline, "predigest_briefings_emitted_total") == 1
    assert counter(pipeline, "predigest_briefing_commands_repeated_total") == 1


async def test_once_delivered_a_repeated_command_sends_nothing_and_restores_a_lost_file(
    pipeline: Pipeline,
) -> None:
    ingest(pipeline, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving\n")
    first = await emit(pipeline, "flush")
    assert not first.delivered
    before = files(pipeline)
    pipeline.delivered(first)

    (pipeline.settings.out_dir / "inference" / "2026-09-27-inference-e1prep-flush-2220.md").unlink()
    again = await emit(pipeline, "flush")
    assert again.delivered  # the control agent sends nothing
    assert again.json_bytes() == first.json_bytes()
    assert files(pipeline) == before  # the lost Markdown is back, byte for byte
    assert (
        Briefing.model_validate_json(before["2026-09-27-inference-e1prep-flush-2220.json"]) == first.briefing
    )
    assert counter(pipeline, "predigest_briefings_emitted_total", "flush") == 1


async def test_close_and_flush_of_one_window_are_two_emissions(pipeline: Pipeline) -> None:
    ingest(pipeline, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving\n")
    close, flush = await emit(pipeline, "close"), await emit(pipeline, "flush")
    assert (close.basename, flush.basename) == (
        "2026-09-27-inference-e1prep",
        "2026-09-27-inference-e1prep-flush-2220",
    )
    assert len(files(pipeline)) == 4


async def test_a_command_for_an_unknown_axis_emits_nothing(pipeline: Pipeline) -> None:
    unknown = ControlCommand(axis="nope", trigger="flush", end=END, requested_at=END, request_id="r")
    assert await pipeline.brief(unknown) is None
    assert not pipeline.settings.out_dir.exists()


async def test_a_briefing_runs_with_the_cyclic_collector_paused_and_turns_it_back_on_even_when_it_fails(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The collector re-scanned a large window's many small objects: about a fifth of a 10k briefing.
    ingest(pipeline, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving arXiv:2609.23130\n")
    seen: list[bool] = []

    def crash(*args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        raise OSError("disk full")

    monkeypatch.setattr(pipeline.state, "record_emission", crash)
    assert gc.isenabled()
    with pytest.raises(OSError):
        await pipeline.brief(command())
    assert seen == [False] and gc.isenabled()
    monkeypatch.undo()
    assert await pipeline.brief(command()) is not None
    assert gc.isenabled()


async def test_a_worker_restarted_on_the_previous_version_s_file_sends_its_undelivered_briefing(
    pipeline: Pipeline,
) -> None:
    """Recorded whole in the emissions row (before bodies were packed), never acknowledged: after the upgrade
    the same command re-emits those bytes, files and topic message alike, and nothing new is assembled."""
    ingest(pipeline, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving arXiv:2609.23130\n")
    recorded = await emit(pipeline)
    written = files(pipeline)
    as_previous_version(pipeline.state)
    pipeline.state.close()
    for f in (pipeline.settings.out_dir / "inference").iterdir():
        f.unlink()

    state = StateStore(pipeline.settings.state_file)
    try:
        restarted = Pipeline(pipeline.settings, state, Metrics(), clock=ticking())
        assert state.undelivered_emissions() == [("inference", END, "close")]
        replay = await emit(restarted)
        assert not replay.fresh and not replay.delivered
        assert replay.json_bytes() == recorded.json_bytes()
        assert files(restarted) == written
        assert b"".join(p.value for p in restarted.messages(replay)) == recorded.json_bytes()
        restarted.delivered(replay)
        assert state.undelivered_emissions() == []
    finally:
        state.close()
    pipeline.state = StateStore(pipeline.settings.state_file)  # for the fixture's close
