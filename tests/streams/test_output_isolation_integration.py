"""One axis's output folder cannot be written (a regular file where it should be, which fails for root too): on the
real broker its briefing waits in the outbox and is reported, the other axes' briefings are written and sent,
ingest goes on, and once the folder is fixed its briefing appears, exactly once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from processors.models import RawFile
from streams import kafka_io
from streams.control import await_briefing
from streams.settings import Settings
from tests.streams.fault_support import metric, worker_metrics
from tests.support import async_wait_for, read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

AXES = ("inference", "llm-infra", "risk", "llm-application")


async def publish_note(s: Settings, path: str, text: str) -> None:
    """A note as the watcher publishes it onto the raw topic."""
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    producer = kafka_io.make_producer(s)
    await producer.start()
    try:
        await (await producer.send(s.kafka.topic("raw"), raw.model_dump_json().encode(), key=path.encode()))
    finally:
        await producer.stop()


def stored(s: Settings) -> float:
    return metric(worker_metrics(s), "predigest_documents_stored_total") or 0.0


def status(s: Settings) -> dict[str, object]:
    body: dict[str, object] = httpx.get(worker_url(s, "/status"), timeout=10).json()
    return body


async def test_an_unwritable_axis_folder_stops_that_axis_only_and_its_briefing_appears_once_when_fixed(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(briefing_retry_seconds=1.0, briefing_retry_max_seconds=2.0)
    await kafka_io.ensure_topics(s)
    s.out_dir.mkdir(parents=True)
    blocker = s.out_dir / "risk"
    blocker.write_text("a file where the risk folder should be\n")
    with running_worker(s, tmp_path) as worker:
        await publish_note(
            s, "inbox/jay/2026-09-27-1000-kv.md", "# vLLM 推理\nKV cache serving, risk 安全.\n"
        )
        await async_wait_for(lambda: stored(s) >= 1, 60, "the first note stored")
        async with httpx.AsyncClient(timeout=10, headers={"X-Predigest-Request": "1"}) as http:
            answer = await http.post(worker_url(s, "/flush"), params={"axis": "all"})
        assert answer.status_code == 202, answer.text
        end = datetime.fromisoformat(answer.json()["queued"][0]["end"])
        for axis in AXES:
            if axis != "risk":
                await await_briefing(s, axis, end, "flush", 90)  # written and sent
                assert len(list((s.out_dir / axis).glob("*-e1prep-flush-*"))) == 2
        await async_wait_for(
            lambda: metric(worker_metrics(s), "predigest_briefing_failing", axis="risk") == 1,
            60,
            "risk reported",
        )
        failing = status(s)["briefing_failures"]
        assert isinstance(failing, dict) and failing["risk"]["reason"] == "not_a_folder", failing
        assert failing["risk"]["pending"] == 1 and list(failing) == ["risk"]
        failures = metric(
            worker_metrics(s), "predigest_briefing_failures_total", axis="risk", reason="not_a_folder"
        )
        assert failures is not None and failures >= 1

        before = stored(s)  # ingest goes on while risk fails
        await publish_note(
            s, "inbox/tom/2026-09-27-1100-kv.md", "# SGLang 推理\nspeculative decoding serving.\n"
        )
        await async_wait_for(lambda: stored(s) > before, 60, "a new note stored while risk fails")

        blocker.unlink()  # fixed
        await await_briefing(s, "risk", end, "flush", 60)
        await async_wait_for(lambda: status(s)["briefing_failures"] == {}, 30, "risk no longer failing")
        assert metric(worker_metrics(s), "predigest_briefing_failing", axis="risk") == 0
        assert worker.poll() is None
    assert len(list((s.out_dir / "risk").glob("*-e1prep-flush-*"))) == 2
    briefings = [json.loads(v) for k, v in await read_topic(s, "briefings")]
    assert sorted(b["axis"] for b in briefings) == sorted(AXES)  # each exactly once
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "cannot be written (not_a_folder" in log and "stopping the worker" not in log
