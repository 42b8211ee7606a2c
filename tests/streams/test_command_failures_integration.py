"""On the real broker: a real worker whose briefing of one axis raises at every attempt (a bug that axis's state
hits, made here by a `sitecustomize` on the worker's PYTHONPATH) dead-letters that command (`briefing_failed`),
commits it, stays up and answers the next flush of another axis; after the fix a replay is answered once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streams import control, kafka_io
from streams.control import await_briefing, new_command
from streams.settings import Settings
from streams.worker_process import PROJECT
from tests.streams.agent_support import NOTE, raw_value
from tests.streams.fault_support import committed, metric, worker_metrics
from tests.streams.test_dead_letters_integration import cli, dead_list, flushed, produce
from tests.support import async_wait_for, read_topic, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# Imported by the worker's interpreter at its start, before streams.assembly binds briefing_of.
BUG = """\
import processors.briefing as briefing

_real = briefing.briefing_of


def briefing_of(request, reads):
    if request.axis.name == "inference":
        raise ZeroDivisionError("a bug the inference state hits")
    return _real(request, reads)


briefing.briefing_of = briefing_of
"""


stored = "predigest_documents_stored_total"


def failed(s: Settings) -> float:
    name = "predigest_commands_failed_total"
    return metric(worker_metrics(s), name, axis="inference", trigger="flush") or 0.0


async def test_a_command_whose_briefing_always_raises_is_dead_lettered_the_worker_answers_on_and_a_replay_once(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    bug = tmp_path / "bug"
    bug.mkdir()
    (bug / "sitecustomize.py").write_text(BUG)
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    with monkeypatch.context() as env:
        env.setenv("PYTHONPATH", f"{bug}:{PROJECT}")  # the worker's interpreter only: the CLI runs after
        with running_worker(s, tmp_path, name="buggy") as worker:
            await control.send(s, new_command("inference", "flush", end, datetime.now(UTC)))
            await control.send(s, new_command("risk", "flush", end, datetime.now(UTC)))
            await await_briefing(s, "risk", end, "flush", 120)  # the next command, of another axis
            await async_wait_for(lambda: failed(s) == 1, 30, "the failed command counted")
            dead = "predigest_dead_letters_total"
            assert metric(worker_metrics(s), dead, stage="control", reason="briefing_failed") == 1
            await produce(s, "raw", NOTE.encode(), raw_value())  # and the axis goes on ingesting
            await async_wait_for(
                lambda: metric(worker_metrics(s), stored, axis="inference", kind="inbox") == 1, 60, "the note"
            )
            assert worker.poll() is None
    assert await committed(s, "control") == 2  # both committed: the failed one is not redelivered at a start
    [letter] = dead_list(s, tmp_path)
    assert (letter["stage"], letter["reason"], letter["offset"]) == ("control", "briefing_failed", 0)
    assert letter["error"].startswith(
        "ZeroDivisionError: a bug the inference state hits (at sitecustomize.py:"
    )
    log = (tmp_path / "buggy.log").read_text(errors="replace")
    assert "CRITICAL" not in log and "failed at every attempt (briefing_failed)" in log

    # The fix is deployed (no sitecustomize); the letter, re-driven twice, makes one briefing.
    with running_worker(s, tmp_path, name="fixed"):
        for _ in range(2):
            done = cli(s, tmp_path, "dead", "replay", "--ids", letter["id"])
            assert done.returncode == 0, done.stderr
        await await_briefing(s, "inference", end, "flush", 120)
        repeated = "predigest_briefing_commands_repeated_total"
        await async_wait_for(
            lambda: metric(worker_metrics(s), repeated, axis="inference", trigger="flush") == 1,
            60,
            "the repeat",
        )
        assert flushed(s, "inference") == 1 and failed(s) == 0
    briefings = sorted(k or b"" for k, _ in await read_topic(s, "briefings"))
    assert briefings == [b"inference", b"risk"]
    assert len(dead_list(s, tmp_path)) == 1  # nothing failed again
