"""On the real broker: a real worker whose briefing of one axis runs out of memory at every attempt (its window too
large for the worker's memory, made here by a `sitecustomize` on the worker's PYTHONPATH) dead-letters that command
(`briefing_memory`), commits it, stays up, answers a flush of another axis and stores a note; one whose state no
longer answers after it stops (exit 75), the command uncommitted, as before."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streams import control, kafka_io
from streams.control import await_briefing, new_command
from streams.failstop import EXIT_CODE
from streams.settings import Settings
from streams.worker_process import PROJECT
from tests.streams.agent_support import NOTE, raw_value
from tests.streams.fault_support import committed, metric, worker_metrics
from tests.streams.test_dead_letters_integration import critical_lines, dead_list, produce
from tests.support import async_wait_for, running_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# Imported by the worker's interpreter at its start, before streams.assembly binds briefing_of. With CLOSE, the
# last attempt also closes the state's DuckDB connection first, as a database lost with the memory would be.
OUT_OF_MEMORY = """\
import gc

import processors.briefing as briefing
from sinks.state import StateStore
from streams.failstop import ATTEMPTS

CLOSE = {close}
_real = briefing.briefing_of
_calls = []


def briefing_of(request, reads):
    if request.axis.name != "inference":
        return _real(request, reads)
    _calls.append(1)
    if CLOSE and len(_calls) == ATTEMPTS:
        for state in [o for o in gc.get_objects() if isinstance(o, StateStore)]:
            state.close()
    raise MemoryError()


briefing.briefing_of = briefing_of
"""


def failed(s: Settings) -> float:
    name = "predigest_commands_failed_total"
    return metric(worker_metrics(s), name, axis="inference", trigger="flush") or 0.0


def with_double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, close: bool) -> None:
    """The worker's interpreter only (the CLI runs after) imports the double."""
    double = tmp_path / "double"
    double.mkdir()
    (double / "sitecustomize.py").write_text(OUT_OF_MEMORY.format(close=close))
    monkeypatch.setenv("PYTHONPATH", f"{double}:{PROJECT}")


async def topics_and_window_end(make_settings: Callable[..., Settings]) -> tuple[Settings, datetime]:
    """Fresh topics, and the end of a window an hour ago for the commands."""
    s = make_settings()
    await kafka_io.ensure_topics(s)
    return s, datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


async def test_a_command_out_of_memory_is_dead_lettered_and_the_worker_answers_and_ingests_on(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, end = await topics_and_window_end(make_settings)
    with monkeypatch.context() as env:
        with_double(tmp_path, env, close=False)
        with running_worker(s, tmp_path, name="short") as worker:
            await control.send(s, new_command("inference", "flush", end, datetime.now(UTC)))
            await control.send(s, new_command("risk", "flush", end, datetime.now(UTC)))
            # On main the worker stopped (exit 75) at the first command and met it again at every restart.
            await await_briefing(s, "risk", end, "flush", 120)
            await async_wait_for(lambda: failed(s) == 1, 30, "the failed command counted")
            dead = "predigest_dead_letters_total"
            assert metric(worker_metrics(s), dead, stage="control", reason="briefing_memory") == 1
            await produce(s, "raw", NOTE.encode(), raw_value())  # the axis goes on ingesting
            stored = "predigest_documents_stored_total"
            await async_wait_for(
                lambda: metric(worker_metrics(s), stored, axis="inference", kind="inbox") == 1, 60, "the note"
            )
            assert worker.poll() is None
    assert await committed(s, "control") == 2  # both: the dead-lettered one is not delivered again at a start
    [letter] = dead_list(s, tmp_path)
    assert (letter["stage"], letter["reason"], letter["offset"]) == ("control", "briefing_memory", 0)
    assert letter["error"].startswith("MemoryError (at sitecustomize.py:")
    assert "PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB" in letter["reason_text"]
    log = (tmp_path / "short.log").read_text(errors="replace")
    assert "CRITICAL" not in log and "ran out of memory at every attempt (briefing_memory)" in log


async def test_a_command_out_of_memory_whose_state_no_longer_answers_stops_the_worker_unacked(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, end = await topics_and_window_end(make_settings)
    with monkeypatch.context() as env:
        with_double(tmp_path, env, close=True)
        with running_worker(s, tmp_path, name="lost") as worker:
            await control.send(s, new_command("inference", "flush", end, datetime.now(UTC)))
            wait_for(lambda: worker.poll() is not None, 120, "the worker to stop")
            assert worker.returncode == EXIT_CODE
    assert await committed(s, "control") == 0  # delivered again after the restart
    [line, *_] = critical_lines(tmp_path / "lost.log")
    assert "failed 5 times (MemoryError (at sitecustomize.py:" in line
    assert f"stopping the worker (exit {EXIT_CODE}) without acknowledging the command" in line
    assert dead_list(s, tmp_path) == []
