"""A command whose answer keeps failing: retried with back-off, then dead-lettered (`briefing_failed`) with the
exception in one line, unless the state or the process is at fault, when the worker stops (exit 75) as before;
one that ran out of memory is dead-lettered (`briefing_memory`) once the memory is back and the state answers."""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NoReturn

import duckdb
import pytest

from sinks.errors import StateLockedError, StateMemoryError, StateUnreadableError
from streams import command_failures
from streams.cgroup_memory import Cgroups
from streams.command_failures import answer_or_fail, failure_of, summary
from streams.failstop import EXIT_CODE


class Stopped(Exception):
    pass


def stop(code: int) -> NoReturn:
    raise Stopped(code)


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def counted() -> int:
    return 3  # the state answers


def shed() -> bool:
    return True  # the state's cache evicted


def failing(
    exc: BaseException, calls: list[int] | None = None, recover_after: int = 0
) -> Callable[[], Awaitable[None]]:
    async def step() -> None:
        if calls is not None:
            calls.append(1)
            if recover_after and len(calls) > recover_after:
                return
        raise exc

    return step


async def test_a_transient_failure_is_retried_with_back_off_and_the_command_answered() -> None:
    sleeps, calls = Sleeps(), list[int]()
    step = failing(StateLockedError("held a moment"), calls, recover_after=2)
    got = await answer_or_fail(step, "answering x", count=counted, shed=shed, stop=stop, sleep=sleeps)
    assert got is None and len(calls) == 3 and sleeps == [0.5, 1.0]


def _bug() -> None:
    raise ZeroDivisionError("division by zero\nand a second line")


async def test_a_bug_that_fails_every_attempt_is_the_commands_own_failure_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sleeps, calls = Sleeps(), list[int]()

    async def step() -> None:
        calls.append(1)
        _bug()

    got = await answer_or_fail(step, "answering x", count=counted, shed=shed, stop=stop, sleep=sleeps)
    assert isinstance(got, ZeroDivisionError)  # to dead-letter, with its one-line summary
    assert summary(got).startswith("ZeroDivisionError: division by zero (at test_command_failures.py:")
    assert len(calls) == 5 and sleeps == [0.5, 1.0, 2.0, 4.0]  # the back-off a transient cause gets
    assert not [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert "answering x failed (attempt 4 of 5): division by zero" in caplog.text


@pytest.mark.parametrize(
    "exc",
    [
        StateUnreadableError("the state file is damaged"),  # the sinks' family: the state's file
        duckdb.IOException("IO Error: No space left on device"),  # its disk
        duckdb.FatalException("database has been invalidated"),
        OSError(5, "Input/output error"),  # the OS
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_failure_of_the_state_or_the_process_stops_the_worker_unacked(
    exc: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(Stopped) as stopped:
        await answer_or_fail(failing(exc), "answering x", count=counted, shed=shed, stop=stop, sleep=Sleeps())
    assert stopped.value.args == (EXIT_CODE,)
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "CRITICAL"]
    assert line.startswith(f"answering x failed 5 times ({type(exc).__name__}")
    assert "stopping the worker (exit 75) without acknowledging the command" in line


OUT_OF_MEMORY = [
    MemoryError(),  # the process (a window too large for its memory)
    duckdb.OutOfMemoryException(
        "Out of Memory Error: failed to pin block of size 256.0 KiB"
    ),  # DuckDB's limit
    StateMemoryError("the state cannot write within 512 MiB; raise PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB"),
]


@pytest.mark.parametrize("exc", OUT_OF_MEMORY, ids=lambda e: type(e).__name__)
async def test_a_command_out_of_memory_with_the_memory_back_and_the_state_answering_is_dead_lettered(
    exc: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    # Stopping the worker met the same command at every restart, and every axis stalled behind it.
    with caplog.at_level(logging.INFO):
        got = await answer_or_fail(
            failing(exc), "answering x", count=counted, shed=shed, stop=stop, sleep=Sleeps()
        )
    assert got is exc and failure_of(exc).reason == "briefing_memory"
    assert not [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert "memory back after a command ran out of it" in caplog.text


@pytest.mark.parametrize("exc", OUT_OF_MEMORY, ids=lambda e: type(e).__name__)
async def test_a_command_out_of_memory_whose_state_no_longer_answers_stops_the_worker(exc: Exception) -> None:
    def count() -> int:
        raise duckdb.ConnectionException("Connection already closed!")

    with pytest.raises(Stopped) as stopped:
        await answer_or_fail(failing(exc), "answering x", count=count, shed=shed, stop=stop, sleep=Sleeps())
    assert stopped.value.args == (EXIT_CODE,)


async def test_a_command_out_of_memory_stops_the_worker_when_the_process_cannot_allocate_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(command_failures, "HEADROOM_BYTES", 1 << 62)  # no machine maps 4 EiB
    with pytest.raises(Stopped):
        await answer_or_fail(
            failing(MemoryError()), "answering x", count=counted, shed=shed, stop=stop, sleep=Sleeps()
        )
    assert "cannot allocate" in caplog.text


async def test_what_a_failed_answer_held_is_collected_before_the_memory_is_judged() -> None:
    class Window:
        pass

    held: list[weakref.ref[Window]] = []

    async def step() -> None:
        window = Window()  # what a briefing's frames hold when it runs out
        held.append(weakref.ref(window))
        raise MemoryError

    got = await answer_or_fail(step, "answering x", count=counted, shed=shed, stop=stop, sleep=Sleeps())
    # The last attempt's (the earlier ones' exceptions are in the log records pytest keeps).
    assert (
        got is not None
        and held[-1]() is None
        and summary(got).startswith("MemoryError (at test_command_failures.py:")
    )


async def test_a_bug_whose_state_no_longer_answers_a_count_stops_the_worker() -> None:
    def count() -> int:
        raise duckdb.InvalidInputException("connection closed")

    with pytest.raises(Stopped):
        await answer_or_fail(
            failing(ValueError("bad row")), "x", count=count, shed=shed, stop=stop, sleep=Sleeps()
        )


async def test_cancellation_is_not_retried_nor_dead_lettered() -> None:
    with pytest.raises(asyncio.CancelledError):
        await answer_or_fail(failing(asyncio.CancelledError()), "x", count=counted, shed=shed, stop=stop)


def test_the_summary_is_one_line_with_type_and_place() -> None:
    assert summary(KeyError("axis")) == "KeyError: 'axis'"
    assert summary(RuntimeError()) == "RuntimeError"
    try:
        _bug()
    except ZeroDivisionError as exc:
        assert re.fullmatch(
            r"ZeroDivisionError: division by zero \(at test_command_failures\.py:\d+ in _bug\)", summary(exc)
        )


class PanicException(BaseException):
    """A Rust panic through PyO3: a BaseException."""


async def test_a_panic_is_the_commands_own_failure_but_a_stop_goes_through() -> None:
    got = await answer_or_fail(
        failing(PanicException("boom")), "x", count=counted, shed=shed, stop=stop, sleep=Sleeps()
    )
    assert isinstance(got, PanicException)
    for passes in (SystemExit(75), KeyboardInterrupt()):
        with pytest.raises(type(passes)):
            await answer_or_fail(failing(passes), "x", count=counted, shed=shed, stop=stop, sleep=Sleeps())


MIB = 1 << 20


def _cgroup(root: Path, *, limit: str, current: int, own: str = "/") -> Cgroups:
    """A cgroup v2 hierarchy under `root` whose process cgroup `own` has `memory.max` and `memory.current`."""
    folder = root.joinpath(*own.split("/")[1:])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.max").write_text(f"{limit}\n")
    (folder / "memory.current").write_text(f"{current}\n")
    membership = root / "cgroup"
    membership.write_text(f"0::{own}\n")
    return Cgroups(root=root, membership=membership)


async def test_out_of_memory_with_no_headroom_under_the_containers_limit_stops_the_worker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An untouched 64 MiB mapping always succeeds under a cgroup's limit: the cgroup's figures say no memory is back.
    cgroups = _cgroup(tmp_path, limit=str(1024 * MIB), current=1000 * MIB, own="/system.slice/worker")
    with pytest.raises(Stopped) as stopped:
        await answer_or_fail(
            failing(MemoryError()), "x", count=counted, shed=shed, stop=stop, sleep=Sleeps(), cgroups=cgroups
        )
    assert stopped.value.args == (EXIT_CODE,)
    assert "memory.current 1000 MiB (0 MiB of it clean file cache) of memory.max 1024 MiB" in caplog.text


async def test_out_of_memory_with_headroom_once_the_states_cache_is_shed_is_dead_lettered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cgroups = _cgroup(tmp_path, limit=str(1024 * MIB), current=1000 * MIB)
    order: list[str] = []

    def shed_cache() -> bool:  # DuckDB's buffer pool evicted: the cgroup's use falls
        order.append("shed")
        (tmp_path / "memory.current").write_text(f"{600 * MIB}\n")
        return True

    def count() -> int:
        order.append("count")
        return 3

    with caplog.at_level(logging.INFO):
        got = await answer_or_fail(
            failing(MemoryError()),
            "x",
            count=count,
            shed=shed_cache,
            stop=stop,
            sleep=Sleeps(),
            cgroups=cgroups,
        )
    assert isinstance(got, MemoryError) and order == ["shed", "count"]
    assert (
        "memory back" in caplog.text
        and "memory.current 600 MiB" in caplog.text
        and "memory.max 1024 MiB" in caplog.text
    )


@pytest.mark.parametrize("membership", ["0::/\n", "4:memory:/docker/abc\n", None], ids=["max", "v1", "none"])
async def test_out_of_memory_without_a_cgroup_v2_limit_is_judged_by_the_allocation_alone(
    tmp_path: Path, membership: str | None
) -> None:
    cgroups = _cgroup(tmp_path, limit="max", current=1000 * MIB)
    if membership is None:
        cgroups.membership.unlink()
    else:
        cgroups.membership.write_text(membership)
    got = await answer_or_fail(
        failing(MemoryError()), "x", count=counted, shed=shed, stop=stop, sleep=Sleeps(), cgroups=cgroups
    )
    assert isinstance(got, MemoryError)


async def test_a_cache_that_could_not_be_shed_is_said_before_the_memory_is_judged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # shed_cache answers False when a read's cursor is open: the figures judged still hold DuckDB's cache.
    cgroups = _cgroup(tmp_path, limit=str(1024 * MIB), current=1000 * MIB)
    with pytest.raises(Stopped):
        await answer_or_fail(
            failing(MemoryError()),
            "x",
            count=counted,
            shed=lambda: False,
            stop=stop,
            sleep=Sleeps(),
            cgroups=cgroups,
        )
    assert "could not shed its cache" in caplog.text
    assert "after the state's cache was shed" not in caplog.text
