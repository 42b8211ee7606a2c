"""DuckDB is a view of the retained topics: deleted, rebuilt by `predigest rebuild`, or unreadable, it comes back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from processors.models import Briefing
from sinks.state import StateStore
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import DEFAULT_AXES, Settings
from streams.watcher import publish_root
from streams.worker_process import PROJECT, dump_settings
from tests.support import async_wait_for, read_topic, running_worker, wait_for, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
AXES = {a.name for a in DEFAULT_AXES}
NOTES = {
    "inbox/jay/2026-09-27-0900-kv.md": "# KV cache 推理\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2%.\n",
    "inbox/jay/2026-09-27-0930-kv-repost.md": "# KV cache 推理\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2%.\n",
    "inbox/tom/2026-09-27-1000-spec.md": "# Speculative decoding\n\ninference speedup 3.8× with SGLang.\n",
    "inbox/tom/2026-09-27-1100-edited.md": "# Draft\n\ninference draft, first version\n",
    "living/inference.md": "# inference.md v3.1\n\n## §3 Serving\n\n### §3.3 Cache Compression\n\nKV cache.\n",
}


def _comparable(b: Briefing) -> dict[str, Any]:
    body = b.model_dump(mode="json", by_alias=True)
    del body["generated_at"], body["trigger"]
    return body


def _check_json_log(path: Path) -> None:
    """With log_json every log line of the worker is a JSON object; lines about a document name it."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) > 20
    assert not [line for line in lines if line.startswith("[20")], "Faust's text handler is still there"
    stored = [r for r in records if r["message"].startswith("stored ")]
    assert len(stored) >= len(NOTES) - 1
    # Every axis weighs every note; the living document goes to its own axis alone.
    assert all(r["path"] in NOTES and r["axis"] in AXES and r["offset"] >= 0 for r in stored)
    assert {r["axis"] for r in stored if r["path"] == "living/inference.md"} <= {"inference"}


def _metric(settings: Settings, line_start: str) -> float:
    for line in httpx.get(worker_url(settings, "/metrics"), timeout=5).text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _ready(settings: Settings) -> dict[str, Any]:
    body: dict[str, Any] = {}

    def caught_up() -> bool:
        try:
            answer = httpx.get(worker_url(settings, "/status"), timeout=30)
        except httpx.TimeoutException:
            return False  # a slow answer on a loaded machine: asked again until the deadline below
        assert answer.status_code == 200, answer.text
        body.update(answer.json())
        return bool(body["owned_partitions"]) and not body["catching_up"]

    # As long as the worker's own start (running_worker waits 90 s for /healthz): a catch-up that never ends,
    # or a /status that never answers, still fails here, with the worker's log.
    wait_for(caught_up, 90, "the state to catch up (/status: owned partitions, not catching up)")
    return body


async def _repeated_only(settings: Settings, trigger: str) -> None:
    """The command is answered with "already emitted": the emission came back from the briefings topic."""
    line = f'predigest_briefing_commands_repeated_total{{axis="inference",trigger="{trigger}"}}'
    before = _metric(settings, line)
    await send_command(settings, "inference", trigger, END)  # type: ignore[arg-type]
    await async_wait_for(lambda: _metric(settings, line) == before + 1, 30, f"the repeated {trigger}")


async def test_deleted_rebuilt_or_unreadable_state_gives_the_same_briefing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    for rel, text in NOTES.items():
        (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.root / rel).write_text(text, encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())
    (s.root / "inbox/tom/2026-09-27-1100-edited.md").write_text("# Draft\n\ninference draft, edited\n")
    await publish_root(s, follow=False, stop=asyncio.Event())

    with running_worker(s.model_copy(update={"log_json": True}), tmp_path / "run1", "worker"):
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", END)
        first = await await_briefing(s, "inference", END, "flush", 60)
        before = _ready(s)["axes"][0]
    _check_json_log(tmp_path / "run1" / "worker.log")

    # 1. The file deleted. The group has committed every record: Faust alone would deliver none of them
    # again (it seeks to the committed offset), so the worker must replay them itself.
    assert await kafka_io.group_caught_up(s, s.app_id, [s.kafka.topic("documents")])
    s.state_file.unlink()
    with running_worker(s, tmp_path / "run2", "worker"):
        assert _ready(s)["axes"][0]["stored"] == before["stored"]
        await _repeated_only(s, "flush")
        async with httpx.AsyncClient() as http:
            latest = await http.get(worker_url(s, "/briefings/inference/latest"), timeout=5)
        assert Briefing.model_validate(latest.json()) == first
        await send_command(s, "inference", "close", END)
        closed = await await_briefing(s, "inference", END, "close", 60)
    assert _comparable(closed) == _comparable(first)
    statuses = sorted((src.path, src.status) for src in closed.sources)
    assert ("inbox/jay/2026-09-27-0930-kv-repost.md", "duplicate") in statuses
    edited = [status for path, status in statuses if path == "inbox/tom/2026-09-27-1100-edited.md"]
    assert len(edited) == 2 and "superseded" in edited
    assert closed.living_doc.version == "v3.1"

    # 2. `predigest rebuild`, the operator's stop-the-world rebuild, with its progress on stderr.
    cfg = dump_settings(s, tmp_path / "rebuild-settings.json")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), "rebuild"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "set aside as" in result.stderr and "record(s) (100%)" in result.stderr
    assert list(s.state_dir.glob("worker.duckdb.rebuild-*"))

    # 3. A file DuckDB cannot open is set aside and counted; the worker rebuilds it from Kafka.
    s.state_file.write_bytes(b"\0garbage\0" * 1000)
    with running_worker(s, tmp_path / "run3", "worker"):
        status = _ready(s)["axes"][0]
        assert status["stored"] == before["stored"]
        assert status["last_briefing"]["trigger"] == "close"
        assert _metric(s, 'predigest_state_set_aside_total{reason="unreadable"}') == 1.0
        await _repeated_only(s, "close")
    assert list(s.state_dir.glob("worker.duckdb.unreadable-*"))
    assert len(await read_topic(s, "briefings")) == 2  # the flush and the close, nothing twice


def _cut_to_half(path: Path) -> None:
    """What a disk fault leaves: DuckDB still opens the file and answers counts from its metadata."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


async def test_a_state_file_cut_to_half_is_set_aside_and_rebuilt(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    for rel, text in NOTES.items():
        (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.root / rel).write_text(text, encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())
    with running_worker(s, tmp_path / "run1", "worker"):
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", END)
        await await_briefing(s, "inference", END, "flush", 60)
        before = _ready(s)["axes"][0]
    # A clean stop closes the state, checkpointed: its rows are in the file, nothing left in a WAL to replay.
    assert not s.state_file.with_name(s.state_file.name + ".wal").exists()

    # 1. `predigest rebuild` on it: set aside as unreadable and rebuilt, where it exited 2 before.
    _cut_to_half(s.state_file)
    cfg = dump_settings(s, tmp_path / "rebuild-settings.json")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), "rebuild"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "truncated" in result.stderr and "set aside as" in result.stderr
    assert len(list(s.state_dir.glob("worker.duckdb.unreadable-*"))) == 1
    state = StateStore(s.state_file)
    try:
        assert state.axis_summary("inference") == before["stored"]
    finally:
        state.close()

    # 2. The worker finds it at start (it used to start on it, answer /healthz and never brief): set aside,
    # counted, rebuilt from Kafka; the flush it already sent is recognised.
    _cut_to_half(s.state_file)
    with running_worker(s, tmp_path / "run2", "worker"):
        assert _ready(s)["axes"][0]["stored"] == before["stored"]
        assert _metric(s, 'predigest_state_set_aside_total{reason="unreadable"}') == 1.0
        await _repeated_only(s, "flush")
    assert len(list(s.state_dir.glob("worker.duckdb.unreadable-*"))) == 2
    assert len(await read_topic(s, "briefings")) == 1
