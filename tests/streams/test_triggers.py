"""Duplicate triggers: close and flush at once, racing flushes, an axis with nothing yet, an axis not configured."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from pydantic import SecretStr

from processors.briefing_names import briefing_basename
from processors.models import Briefing
from streams import control, kafka_io
from streams.control import await_briefing, new_command, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.streams.fault_support import metric, worker_metrics
from tests.support import async_wait_for, read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

SH = ZoneInfo("Asia/Shanghai")
PROJECT = Path(__file__).resolve().parents[2]


async def briefings(s: Settings) -> list[Briefing]:
    return [Briefing.model_validate_json(v) for _, v in await read_topic(s, "briefings")]


def repeated(s: Settings, trigger: str) -> float:
    name = "predigest_briefing_commands_repeated_total"
    return metric(worker_metrics(s), name, axis="inference", trigger=trigger) or 0.0


async def notes(s: Settings, end: datetime) -> None:
    path = s.root / "inbox/jay/note.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    when = (end - timedelta(hours=1)).isoformat()
    path.write_text(f"---\ndate: {when}\n---\n# vLLM 推理\nKV cache serving.\n", encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())


async def test_the_scheduled_close_a_manual_close_and_a_flush_of_one_window_at_once(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    end = datetime.now(SH).replace(microsecond=0) + timedelta(seconds=10)
    if end.date() != (end + timedelta(minutes=2)).date():
        pytest.skip("the schedule is per local day; not across midnight")
    grace = 5.0
    s = make_settings(close_enabled=True, close_at=end.time(), grace_seconds=grace, close_check_seconds=1.0)
    await kafka_io.ensure_topics(s)
    await notes(s, end)
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        # The moment the close is due (the timer sends it), two operators close and one flushes the same window.
        await asyncio.sleep(max(0.0, (end + timedelta(seconds=grace) - datetime.now(SH)).total_seconds()))
        await asyncio.gather(
            send_command(s, "inference", "close", end),
            send_command(s, "inference", "close", end),
            send_command(s, "inference", "flush", end),
        )
        close = await await_briefing(s, "inference", end, "close", 60)
        flush = await await_briefing(s, "inference", end, "flush", 60)
        await async_wait_for(lambda: repeated(s, "close") >= 1, 30, "the second close to be counted")
    mine = [b for b in await briefings(s) if b.axis == "inference" and b.window.end == end]
    assert sorted(b.trigger for b in mine) == ["close", "flush"]  # one of each, never two of one
    assert [src.path for src in close.sources] == [src.path for src in flush.sources] == ["inbox/jay/note.md"]
    names = sorted(p.name for p in (s.out_dir / "inference").iterdir() if f"{end:%Y-%m-%d}" in p.name)
    close_stem = briefing_basename("inference", end, "close", SH)
    flush_stem = briefing_basename("inference", end, "flush", SH)
    assert names == sorted(
        [f"{close_stem}.json", f"{close_stem}.md", f"{flush_stem}.json", f"{flush_stem}.md"]
    )


async def test_racing_flushes_an_axis_without_documents_and_an_unknown_axis(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(token=SecretStr("t0ken"))
    await kafka_io.ensure_topics(s)
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    await notes(s, end)
    auth = {"Authorization": "Bearer t0ken", "X-Predigest-Request": "1"}
    flush = [
        sys.executable, "-m", "streams.cli", "flush", "--axis", "inference", "--end", end.isoformat()
    ]  # fmt: skip
    env = {
        "PREDIGEST_KAFKA__BOOTSTRAP": s.kafka.bootstrap or "",
        "PREDIGEST_KAFKA__TOPIC_PREFIX": s.kafka.topic_prefix,
    }
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        async with httpx.AsyncClient(timeout=10) as http:
            params = {"axis": "inference", "end": end.isoformat()}
            answers = await asyncio.gather(
                http.post(worker_url(s, "/flush"), params=params, headers=auth),
                http.post(worker_url(s, "/flush"), params=params, headers=auth),
                asyncio.to_thread(
                    subprocess.run, flush, cwd=PROJECT, env=env, capture_output=True, timeout=60
                ),
            )
            assert [a.status_code for a in answers[:2]] == [202, 202]
            assert answers[2].returncode == 0, answers[2].stderr
            # An axis none of whose keywords the note uses: a briefing that accounts for it and adds nothing.
            owned = await http.post(
                worker_url(s, "/flush"), params={"axis": "risk", "end": end.isoformat()}, headers=auth
            )
            assert owned.status_code == 202
            unknown = await http.post(worker_url(s, "/flush"), params={"axis": "nope"}, headers=auth)
            assert unknown.status_code == 400
            assert unknown.json() == {"error": "unknown axis ['nope']", "axes": [a.name for a in s.axes]}
        cli = await asyncio.to_thread(
            subprocess.run,
            [*flush[:5], "nope"],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert cli.returncode == 2 and "axis 'nope' is not configured" in cli.stderr
        # A command for an axis this worker does not know (an older config, a typo) is refused, loudly.
        await control.send(s, new_command("nope", "flush", end, datetime.now(UTC)))
        risk = await await_briefing(s, "risk", end, "flush", 60)
        await await_briefing(s, "inference", end, "flush", 60)
        await async_wait_for(lambda: repeated(s, "flush") == 2, 30, "two of the three flushes to repeat")
        await send_command(s, "risk", "flush", end + timedelta(minutes=1))  # the worker is still answering
        await await_briefing(s, "risk", end + timedelta(minutes=1), "flush", 60)
        refused = metric(worker_metrics(s), "predigest_commands_refused_total", reason="unknown_axis")
        assert refused == 1
    emitted = await briefings(s)
    assert sorted((b.axis, b.window.end) for b in emitted) == [
        ("inference", end),
        ("risk", end),
        ("risk", end + timedelta(minutes=1)),
    ]
    assert risk.increments == []
    assert [(src.path, src.status) for src in risk.sources] == [("inbox/jay/note.md", "no_increment")]
    assert [n.path for n in risk.no_increment_sources] == ["inbox/jay/note.md"]
    log = (tmp_path / "worker.log").read_text()
    assert "refused the flush command" in log and "(unknown_axis): axis 'nope' is not configured" in log
