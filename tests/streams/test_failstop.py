"""must_finish: retries a failing agent step, then ends the process before Faust could ack the record; a batch's
task that fails otherwise ends it as soon as it fails."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from streams.failstop import EXIT_CODE, must_finish, stop_on_failure, to_thread_to_the_end

R = TypeVar("R")
PROJECT = Path(__file__).resolve().parents[2]


class Stopped(Exception):
    pass


def stop(code: int) -> NoReturn:
    raise Stopped(code)


async def test_a_step_that_recovers_is_retried_with_doubling_back_off() -> None:
    calls, sleeps = [], []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OSError("DuckDB write failed")
        return "stored"

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    assert await must_finish(flaky, "storing x", sleep=sleep, stop=stop) == "stored"
    assert sleeps == [0.5, 1.0]


async def test_the_back_off_doubles_up_to_its_cap_and_each_retry_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls, sleeps = [], []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 7:
            raise OSError("broker away")
        return "sent"

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    assert await must_finish(flaky, "sending x", attempts=7, sleep=sleep, stop=stop) == "sent"
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert "sending x failed (attempt 1 of 7): broker away; retrying in 0.5s" in caplog.text


async def test_a_step_that_keeps_failing_stops_the_process(caplog: pytest.LogCaptureFixture) -> None:
    async def broken() -> None:
        raise OSError("disk gone")

    async def sleep(seconds: float) -> None:
        return None

    with pytest.raises(Stopped) as stopped:
        await must_finish(broken, "storing x", attempts=3, sleep=sleep, stop=stop)
    assert stopped.value.args == (EXIT_CODE,)
    assert "storing x failed 3 times" in caplog.text


async def test_cancellation_is_not_retried() -> None:
    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await must_finish(cancelled, "x", stop=stop)


class Rows:
    """What a store step holds: a batch's rows."""


class LingeringThreads(ThreadPoolExecutor):
    """Each job in a thread that keeps it until `release`: the pool's thread keeps it until its `del work_item`, which
    the event loop it wakes often outruns."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        future: Future[R] = Future()

        def work() -> None:
            future.set_result(fn(*args, **kwargs))
            self.release.wait(10)

        threading.Thread(target=work).start()
        return future


async def test_a_step_run_in_a_thread_is_let_go_of_as_it_returns() -> None:
    threads = LingeringThreads()
    asyncio.get_running_loop().set_default_executor(threads)
    rows = Rows()
    held = weakref.ref(rows)
    gc.disable()  # only reference counting frees the rows: no collection meets them
    try:
        assert await to_thread_to_the_end(partial(isinstance, rows, Rows), "storing") is True
        del rows
        # Freed as the awaiting task goes on, not when the thread gets to drop its job (a young collection
        # then traversed every row of the batch, docs/performance.md).
        assert held() is None
    finally:
        gc.enable()
        threads.release.set()


async def test_a_batch_task_that_raises_stops_the_worker_when_it_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Not when the next batch comes: on a quiet stream none does, and the stuck lag had no word beside it.
    codes: list[int] = []

    def recorded(code: int) -> NoReturn:
        codes.append(code)
        raise Stopped(code)  # the worker's halt never returns; asyncio logs this one and goes on

    async def broken() -> None:
        raise ValueError("a record no step can read")

    async def fine() -> None:
        return None

    async def waits() -> None:
        await asyncio.sleep(10)

    tasks = [asyncio.create_task(step()) for step in (broken, fine, waits)]
    for task in tasks:
        task.add_done_callback(stop_on_failure("a parse batch", recorded))
    tasks[2].cancel()  # a stop: nothing to report
    await asyncio.wait(tasks)
    await asyncio.sleep(0)  # the callbacks run on the loop's next turn
    assert codes == [EXIT_CODE]
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "CRITICAL"]
    assert line == (
        "a parse batch failed: a record no step can read; stopping the worker (exit 75) without acknowledging "
        "its records, which Kafka will deliver again after the restart; if it fails again, fix the cause this "
        "traceback shows"
    )
    assert tasks[0].exception() is not None  # retrieved: no "never retrieved" warning at exit either


def test_halt_skips_finally_blocks_so_nothing_after_the_failure_runs(tmp_path: Path) -> None:
    # Faust acks a record in its stream's `finally`; halt must leave before any `finally` runs.
    marker = tmp_path / "finally-ran"
    code = (
        "from streams.failstop import halt\n"
        "try:\n    halt()\n"
        f"finally:\n    open({str(marker)!r}, 'w').write('acked')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, timeout=60, check=False)
    assert result.returncode == EXIT_CODE
    assert not marker.exists()
