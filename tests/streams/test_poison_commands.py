"""Poison commands: a flush whose end is off the calendar or out of reach is refused at the door (HTTP 400, CLI
exit 2); put on the control topic by another producer, it is counted and skipped, and the worker answers on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from processors.commands import COMMAND_REFUSALS
from processors.models import ControlCommand
from streams import control, kafka_io
from streams.control import await_briefing, new_command
from streams.settings import Settings
from tests.streams.fault_support import committed, metric, worker_metrics
from tests.support import async_wait_for, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROJECT = Path(__file__).resolve().parents[2]
FAR_AHEAD = "9999-12-31T23:59:59+00:00"
LONG_AGO = "0001-01-01T00:00:00+00:00"


def refused(s: Settings) -> dict[str, float]:
    name = "predigest_commands_refused_total"
    return {r: metric(worker_metrics(s), name, reason=r) or 0.0 for r in COMMAND_REFUSALS}


def raw(axis: str, end: datetime) -> ControlCommand:
    """A command as another producer (or an older predigest) would write it: nothing checked."""
    return ControlCommand(
        axis=axis, trigger="flush", end=end, requested_at=datetime.now(UTC), request_id=uuid4().hex
    )


async def test_hostile_commands_on_the_topic_are_counted_and_skipped_and_the_worker_answers_on(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(flush_max_past_days=366)  # the default reach
    await kafka_io.ensure_topics(s)
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    hostile = [
        raw("inference", datetime.fromisoformat(FAR_AHEAD)),
        raw("inference", datetime.fromisoformat(LONG_AGO)),
        raw("inference", datetime.fromisoformat("2026-09-27T22:20:00")),  # no offset
        raw("nope", end),
    ]
    with running_worker(s, tmp_path) as worker:
        for command in hostile:
            await control.send(s, command)  # straight onto the topic, past the door
        await control.send(s, new_command("risk", "flush", end, datetime.now(UTC)))
        await await_briefing(s, "risk", end, "flush", 90)  # another axis
        await control.send(s, new_command("inference", "flush", end, datetime.now(UTC)))
        await await_briefing(s, "inference", end, "flush", 90)  # and the axis the poison named
        await async_wait_for(lambda: sum(refused(s).values()) == 4, 30, "the refusals to be counted")
        assert refused(s) == {
            "unknown_axis": 1,
            "naive_end": 1,
            "end_too_old": 1,
            "end_too_far_ahead": 1,
            "window_out_of_range": 0,
        }
        assert worker.poll() is None
    assert await committed(s, "control") == 6  # skipped and committed: not redelivered at the next start
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert "OverflowError" not in log and "Traceback" not in log
    assert "refused the flush command" in log and "(end_too_far_ahead)" in log

    with running_worker(s, tmp_path, name="restarted"):
        later = end + timedelta(minutes=1)
        await control.send(s, new_command("inference", "flush", later, datetime.now(UTC)))
        await await_briefing(s, "inference", later, "flush", 90)
        assert sum(refused(s).values()) == 0


async def test_the_web_door_refuses_a_poison_flush_with_its_reason(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(flush_max_past_days=366)
    await kafka_io.ensure_topics(s)
    with running_worker(s, tmp_path):
        async with httpx.AsyncClient(timeout=10, headers={"X-Predigest-Request": "1"}) as http:
            for axis, end, reason in (
                ("inference", FAR_AHEAD, "end_too_far_ahead"),
                ("inference", LONG_AGO, "end_too_old"),
                ("all", LONG_AGO, "end_too_old"),  # every axis or none
                ("risk", "2026-09-27T22:20:00", "naive_end"),
            ):
                answer = await http.post(worker_url(s, "/flush"), params={"axis": axis, "end": end})
                assert answer.status_code == 400, (axis, end, answer.text)
                assert answer.json()["reason"] == reason
                assert end in answer.json()["error"]
    assert await committed(s, "control") == 0  # nothing reached the topic


@pytest.mark.parametrize(("end", "reason"), [(FAR_AHEAD, "end_too_far_ahead"), (LONG_AGO, "end_too_old")])
def test_the_cli_refuses_a_poison_flush_with_exit_2_and_one_line(end: str, reason: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "PREDIGEST_KAFKA__BOOTSTRAP": "127.0.0.1:9"}  # never contacted
    cmd = [sys.executable, "-m", "streams.cli", "flush", "--axis", "inference", "--end", end]
    done = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert f"flush refused ({reason})" in done.stderr and end in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
