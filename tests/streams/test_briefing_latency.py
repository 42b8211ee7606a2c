"""What a worker's briefing command waits for: nothing that could be done before it came."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2
import pytest

from processors import render_markdown
from processors.models import ControlCommand
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings
from tests.clocks import ManualClock
from tests.state_support import SH
from tests.streams.pipeline_support import ingest, raw_file

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the templates Jinja compiles from now on (none is cached yet)."""
    names: list[str] = []
    compile_template = jinja2.Environment.compile

    def counted(env: jinja2.Environment, source: Any, name: str | None = None, *args: Any, **kw: Any) -> Any:
        names.append(name or "?")
        return compile_template(env, source, name, *args, **kw)

    monkeypatch.setattr(render_markdown._ENV, "cache", {})
    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    return names


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
    )


@pytest.fixture
def state(settings: Settings) -> Iterator[StateStore]:
    store = StateStore(settings.state_file)
    yield store
    store.close()


async def test_the_first_briefing_of_a_worker_compiles_no_template(
    compiled: list[str], settings: Settings, state: StateStore
) -> None:
    pipeline = Pipeline(settings, state, Metrics(), clock=ManualClock(END + timedelta(minutes=10)))
    assert compiled == ["briefing.md.j2"]  # at the worker's start, with its state
    ingest(pipeline, raw_file("inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving\n"))
    command = ControlCommand(axis="inference", trigger="flush", end=END, requested_at=END, request_id="r")
    emission = await pipeline.brief(command)
    assert emission is not None and b"".join(emission.markdown_pieces() or ())
    assert compiled == ["briefing.md.j2"]
