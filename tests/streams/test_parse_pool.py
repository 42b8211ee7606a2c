"""The parse pool: worker processes route as the event loop would, and never outlive a SIGKILLed worker."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from processors.models import RawFile
from processors.parse_stage import Routed, RouteParams, documents_records
from processors.wire import decode_rows
from sinks.clock import SYSTEM_CLOCK
from streams import heap
from streams.parse_pool import ParsePool
from streams.parse_process import Route
from streams.pipeline import route_params
from streams.settings import Settings
from tests.clocks import ManualClock
from tests.streams.parse_routes import (
    POISON,
    dies_in_turn,
    dies_on_poison,
    hangs_on_poison,
    hangs_on_poison_telling,
    poisoned_at,
    says_its_heap,
    says_its_niceness,
    slow_telling,
    wait_for,
)

# Slower than a unit test by design (many cases, worst-case inputs, or processes): its own bound.
pytestmark = pytest.mark.timeout(120)

NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
PROJECT = Path(__file__).resolve().parents[2]


def _value(i: int) -> bytes:
    data = f"# vLLM 推理 {i}\nKV cache agent GPU\n".encode()
    path = f"inbox/jay/2026-09-27-1000-n{i}.md"
    return (
        RawFile(path=path, content=data, size=len(data), mtime=1.0, sha256=hashlib.sha256(data).hexdigest())
        .model_dump_json()
        .encode()
    )


def _axes(routed: Routed) -> list[str | None]:
    """The axes a routed note's documents records are for (one record for them all on one partition)."""
    assert len(routed.records) == 1
    return [row.header.axis for _, value in routed.records for row in decode_rows(value)]


def _rows(routed: Sequence[Routed], params: RouteParams) -> list[tuple[str, str | None]]:
    """(path, axis) of every row the batch's documents records hold, in order."""
    records = documents_records(routed, params)
    return [(row.header.path, row.header.axis) for _, value in records for row in decode_rows(value)]


def _told(routed: Routed) -> Routed:
    """What the worker logs and counts of a routed note: all but its records."""
    return replace(routed, records=(), frames=(), packed=0)


async def test_processes_route_a_batch_as_the_event_loop_does() -> None:
    params = route_params(Settings())
    values = [(_value(i), i) for i in range(7)] + [(b"not json", 7)]
    inline = await ParsePool(params, 0).route(values, NOW)
    pool = ParsePool(params, 2)
    try:
        routed = await pool.route(values, NOW)
    finally:
        pool.close()
    assert [_told(r) for r in routed] == [_told(r) for r in inline]
    # Their records compressed in the processes: the same rows, in the same order.
    assert _rows(routed, params) == _rows(inline, params)
    assert not any(r.records for r in routed) and [r.packed for r in routed] == [
        len(r.records) for r in inline
    ]
    assert [r.path for r in inline[:7]] == [f"inbox/jay/2026-09-27-1000-n{i}.md" for i in range(7)]
    every = [a.name for a in params.axes]
    assert all(_axes(r) == every for r in inline[:7])  # every axis weighs every note
    assert inline[7].unreadable is not None


async def test_a_note_that_kills_or_hangs_its_parse_process_is_rejected_and_the_rest_of_the_batch_parsed() -> (
    None
):
    params = route_params(Settings())
    values = [(_value(i), i) for i in range(6)]
    for broken in (dies_on_poison, hangs_on_poison):
        pool = ParsePool(params, 2, note_seconds=3.0, route=broken)
        try:
            routed = await pool.route(values, NOW)
        finally:
            pool.close(kill=True)
        assert [r.path for r in routed] == [f"inbox/jay/2026-09-27-1000-n{i}.md" for i in range(6)]
        poisoned = routed[POISON]
        assert (
            poisoned.rejection is not None and "could not be routed (its parse process" in poisoned.rejection
        )
        every = [a.name for a in params.axes]
        assert _axes(poisoned) == every  # a rejection for every axis, as for any bad file
        assert all(r.rejection is None for i, r in enumerate(routed) if i != POISON)
        rows = _rows(routed, params)
        assert all([a for p, a in rows if p == r.path] == every for r in routed)
        # The retried chunks never span the note routed alone: each record keeps its notes in raw order, as a
        # path's versions must stay (a copy stored after its rejected copy would otherwise be listed rejected).
        for _, value in documents_records(routed, params):
            offsets = [row.header.raw_offset or 0 for row in decode_rows(value)]
            assert offsets == sorted(offsets)


@pytest.mark.parametrize("poisoned", [0, 1], ids=["older batch", "younger batch"])
@pytest.mark.parametrize("broken", [dies_on_poison, hangs_on_poison], ids=["dies", "hangs"])
async def test_batches_routed_at_once_lose_only_the_note_that_kills_or_hangs_their_shared_pool(
    poisoned: int, broken: Route
) -> None:
    # The parse agent routes the next batch while this one ends: a fault in the shared pool hits both batches'
    # notes in progress, and still only the poisoned note is rejected, whichever batch it is in.
    params = route_params(Settings())
    first = range(10, 40) if poisoned else range(30)
    second = range(40, 70) if poisoned else range(30, 60)
    batches = [[(_value(i), i) for i in first], [(_value(i), i) for i in second]]
    poison = POISON + 40 if poisoned else POISON
    # A death is seen whatever the time: on a still clock no note looks hung. On the wall clock a fresh pool's
    # first notes, waiting for a core at load 16, passed 3 s: rejected as hung, and the pool killed again.
    clock = ManualClock() if broken is dies_on_poison else SYSTEM_CLOCK
    pool = ParsePool(params, 2, 3.0, partial(poisoned_at, broken, poison), clock)
    try:
        routed = await asyncio.gather(*(pool.route(values, NOW) for values in batches))
    finally:
        pool.close(kill=True)
    for values, got in zip(batches, routed, strict=True):
        assert [r.path for r in got] == [f"inbox/jay/2026-09-27-1000-n{offset}.md" for _, offset in values]
        assert [r.rejection is not None for r in got] == [offset == poison for _, offset in values]


class _Said(logging.Handler):
    """An event for each level, set as the pool logs its first line at it (in the event loop's thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.levels = {"WARNING": asyncio.Event(), "ERROR": asyncio.Event()}

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelname in self.levels:
            self.levels[record.levelname].set()


async def test_a_death_in_the_younger_batch_sends_the_older_ones_queued_notes_to_a_fresh_pool_not_each_alone(
    tmp_path: Path,
) -> None:
    # The older batch, routing again after a death of its own, queues behind a younger batch that started in the
    # fresh pool meanwhile; a note of the younger one kills that pool too. No note of the older batch was in
    # progress: each of its unfinished notes was tried alone, a process each (~1 s of CPU, up to a whole batch
    # of 500), though a process was on the younger batch's note, which is tried alone in its turn.
    params = route_params(Settings())
    older, younger = [(_value(i), i) for i in range(10, 20)], [(_value(i), i) for i in range(40, 48)]
    pool = ParsePool(params, 1, route=partial(dies_in_turn, tmp_path))
    said, logger = _Said(), logging.getLogger("streams.parse_pool")
    logger.addHandler(said)
    try:
        first = asyncio.ensure_future(pool.route(older, NOW))
        # Its pool killed and its poisoned note being tried alone: the younger batch goes to a fresh pool.
        await asyncio.wait_for(said.levels["WARNING"].wait(), 60)
        second = asyncio.ensure_future(pool.route(younger, NOW))
        # Its poisoned note rejected, the rest of it queued behind the younger batch.
        await asyncio.wait_for(said.levels["ERROR"].wait(), 60)
        (tmp_path / "go").touch()
        routed = await asyncio.wait_for(asyncio.gather(first, second), 100)
    finally:
        logger.removeHandler(said)
        pool.close(kill=True)
    assert [r.rejection is not None for r in routed[0]] == [offset == 10 for _, offset in older]
    assert [r.rejection is not None for r in routed[1]] == [offset == 47 for _, offset in younger]
    # Six processes: the first pool's, each poisoned note's alone, and a fresh pool after each of the three
    # deaths in a shared pool. The older batch's notes each alone: nine more.
    assert len([f for f in tmp_path.iterdir() if f.name.isdigit()]) <= 6


class _StillUntilTheNoteHangs(ManualClock):
    """The pool's clock: still until a reading sees the poisoned note's marker (its board, read after the clock,
    then shows the note started), then `seconds` on at the next reading, and still again."""

    def __init__(self, marker: Path, seconds: float) -> None:
        super().__init__()
        self._marker, self._seconds = marker, seconds
        self._seen = self._moved = False

    def monotonic(self) -> float:
        if self._seen and not self._moved:
            self._moved = True
            self.advance(self._seconds)
        self._seen = self._seen or self._marker.exists()
        return super().monotonic()


async def test_a_hung_note_costs_the_rest_of_its_batch_one_note_timeout_not_a_retry_note_by_note(
    tmp_path: Path,
) -> None:
    # Issue 15: after a 30 s timeout the whole batch was parsed again note by note, ~90 s for the others. The
    # processes now say which note they are on: the one past note_seconds is rejected, the rest goes to a fresh
    # pool at once. The pool's clock moves once, one note timeout, after the hung note started: a batch that
    # waited for more (a timeout of the whole batch, or the note timed out again alone) never ends. Measured on
    # the wall clock it failed under load (spawning the fresh pool took ~30 s at load 15-20).
    params = route_params(Settings())
    values = [(_value(i), i) for i in range(40)]
    note_seconds = 4.0
    clock = _StillUntilTheNoteHangs(tmp_path / "hung", note_seconds + 1)
    # One process: no other note is in progress, to look hung, when the clock moves.
    pool = ParsePool(params, 1, note_seconds, partial(hangs_on_poison_telling, tmp_path), clock)
    try:
        routed = await asyncio.wait_for(pool.route(values, NOW), 100)  # the test's timeout is 120 s
    finally:
        pool.close(kill=True)
    assert [r.rejection is not None for r in routed] == [i == POISON for i in range(40)]
    assert "its parse process hung" in (routed[POISON].rejection or "")
    # The process that hung and one fresh pool's: a retry note by note would start a process a note.
    assert len([f for f in tmp_path.iterdir() if f.name != "hung"]) <= 2


async def test_parse_processes_keep_their_freed_buffers_as_the_worker_does() -> None:
    # With glibc's own thresholds a chunk's pickles and records were mapped and faulted in anew each time
    # (~12 page faults a note, docs/performance.md).
    pool = ParsePool(route_params(Settings()), 2, route=says_its_heap)
    try:
        routed = await pool.route([(_value(i), i) for i in range(20)], NOW)
    finally:
        pool.close()
    assert {r.path for r in routed} == {repr(heap.INGEST)}


async def test_parse_processes_yield_the_cpu_to_the_worker_by_the_configured_steps() -> None:
    # At even priority the parsing outran the worker's store on a busy box, which then finished ~10 s after it
    # at a 100k backfill with a core idle (docs/performance.md).
    settings = Settings(parse_nice=7)
    pool = ParsePool(route_params(settings), 2, route=says_its_niceness, nice=settings.parse_nice)
    try:
        shared = await pool.route([(_value(i), i) for i in range(20)], NOW)
        alone = await pool._alone([(_value(0), 0)], 0, NOW)  # a suspect note's pool of its own
    finally:
        pool.close()
    assert {r.path for r in shared} | {r.path for r in alone.routed.values()} == {str(os.nice(0) + 7)}


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.add(int(entry.name))
    return out


def _starting(pid: int, before: set[int]) -> set[int]:
    """The parse processes `pid` started since `before` (the resource tracker is a child too)."""
    return {c for c in _children(pid) - before if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()}


def _exec_ed(pid: int, before: set[int], count: int) -> set[int]:
    """`_starting`, once `count` of them run their own command line: a child forked but not yet exec'd still
    shows the parent's (seen at load 8); their imports then take a second, so a signal sent now still lands
    before their initializer."""
    for _ in range(400):  # 2 s at most
        if len(launched := _starting(pid, before)) >= count:
            return launched
        time.sleep(0.005)  # blocking on purpose: the pool's loop must not move on meanwhile
    return _starting(pid, before)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_parse_processes_signalled_as_they_start_keep_running_and_say_nothing(
    sig: int, capfd: pytest.CaptureFixture[str]
) -> None:
    # A Ctrl-C reaches the whole process group, the worker's parse processes included, and a signal that came
    # before their initializer ignored it ended them: a KeyboardInterrupt traceback each in the operator's
    # terminal (or a silent death, before Python's own handler), and the worker's start failed with the pool.
    params = route_params(Settings())
    values = [(_value(i), i) for i in range(8)]
    before = _children(os.getpid())
    pool = ParsePool(params, 2)
    try:
        starting = asyncio.ensure_future(pool.start())
        await asyncio.sleep(0)  # its processes launched: not yet at their first line of Python
        launched = _exec_ed(os.getpid(), before, 2)
        for pid in launched:
            os.kill(pid, sig)
        await starting
        routed = await pool.route(values, NOW)
        assert _starting(os.getpid(), before) == launched  # the same processes: no fresh pool
    finally:
        pool.close(kill=True)
    assert len(launched) == 2
    assert [_told(r) for r in routed] == [_told(r) for r in await ParsePool(params, 0).route(values, NOW)]
    said = capfd.readouterr().err
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said


@pytest.mark.parametrize("victim", [0, 1], ids=["first", "second"])
async def test_a_parse_process_dying_while_its_pool_waits_leaves_no_other_behind_and_a_fresh_pool_parses_on(
    victim: int,
) -> None:
    # The pool's own answer to a process that died is to end the others (their queue's lock may be held by the
    # dead one: an idle process waits on it forever); they ignore SIGTERM, so it kills them. One of the two
    # idle processes holds that lock: each is killed in turn.
    pool = ParsePool(route_params(Settings()), 2)
    before = _children(os.getpid())
    try:
        await pool.start()
        await asyncio.sleep(0.5)  # both back at the queue, one of them reading it
        started = sorted(_starting(os.getpid(), before))
        os.kill(started[victim], signal.SIGKILL)
        for _ in range(50):  # 10 s at most
            if not _running(started):
                break
            await asyncio.sleep(0.2)
        assert _running(started) == [], "parse processes outlived their broken pool"
        # No batch saw it die: the next one goes to a fresh pool (it raised BrokenProcessPool at each of its
        # attempts, and the worker stopped with exit 75).
        values = [(_value(i), i) for i in range(8)]
        routed = await pool.route(values, NOW)
    finally:
        pool.close(kill=True)
    inline = await ParsePool(route_params(Settings()), 0).route(values, NOW)
    assert [_told(r) for r in routed] == [_told(r) for r in inline]


async def test_a_death_under_a_batch_it_has_not_looked_at_yet_is_not_said_to_be_while_idle(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The next batch found the pool broken before the batch it died under looked at it (every 0.2 s), and said
    # `a parse process died while idle` beside that batch's own line: two deaths in the log for one, one false.
    params = route_params(Settings())
    older, younger = [(_value(i), i) for i in range(8)], [(_value(i), i) for i in range(40, 48)]
    before = _children(os.getpid())
    pool = ParsePool(params, 2, route=dies_on_poison)
    try:
        await pool.start()
        started = sorted(_starting(os.getpid(), before))
        first = asyncio.ensure_future(pool.route(older, NOW))
        await asyncio.sleep(0)  # its chunk handed to the pool, which it looks at next in 0.2 s
        # The event loop held until the pool's thread has seen the death (it then kills the other process): the
        # younger batch's first step runs before the older batch's look, as the loop's callbacks are queued.
        _until_ended(started)
        second = asyncio.ensure_future(pool.route(younger, NOW))
        routed = await asyncio.wait_for(asyncio.gather(first, second), 100)
    finally:
        pool.close(kill=True)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said and not [line for line in said if "idle" in line], said
    assert [r.rejection is not None for r in routed[0]] == [offset == POISON for _, offset in older]
    assert all(r.rejection is None for r in routed[1])


async def test_a_batch_cancelled_by_the_stop_begins_no_more_notes_in_the_processes(tmp_path: Path) -> None:
    # A stop cancels the batches in flight (streams.parse_flow.stop), unacked, for the restart to parse again; their
    # chunks already handed to the pool ran on in its processes until the stop killed them (a batch of 500 notes:
    # up to ~0.5 s of CPU, for nothing, beside the stop's checkpoint).
    params = route_params(Settings())
    values = [(_value(i), i) for i in range(80)]  # eight chunks of 10 notes, 50 ms each
    pool = ParsePool(params, 2, route=partial(slow_telling, tmp_path))
    try:
        await pool.start()
        routing = asyncio.ensure_future(pool.route(values, NOW))
        await asyncio.to_thread(wait_for, tmp_path / "1")  # its notes under way
        routing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await routing
        begun = {f.name for f in tmp_path.iterdir()}
        await asyncio.sleep(1)  # 20 notes' time for each process
        later = {f.name for f in tmp_path.iterdir()} - begun
        again = await pool.route(values, NOW)  # what the restart does with the batch: each note is routed
    finally:
        pool.close(kill=True)
    assert len(later) <= 2, f"{len(later)} notes of the cancelled batch began after its cancellation"
    inline = await ParsePool(params, 0).route(values, NOW)
    assert [_told(r) for r in again] == [_told(r) for r in inline]


def _until_ended(pids: Sequence[int]) -> None:
    """Until none of `pids` runs (60 s at most), holding the caller's thread (an event loop's too)."""
    deadline = time.monotonic() + 60
    while _running(pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(pids: Sequence[int]) -> list[int]:
    """The processes of `pids` still running (not zombies)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append(pid)
    return out


def test_a_parse_process_dying_as_it_sends_a_result_costs_no_note_and_no_stuck_exit(tmp_path: Path) -> None:
    # The pool's own thread, reading the half-sent result, waited for the rest forever: it never said the
    # process died. The notes in progress were rejected as hung after note_seconds (the one the process died
    # after, innocent, and the other process's, waiting to send), a batch with none in progress waited forever,
    # and the worker's exit waited for that thread (at a stop: its hard exit, 15 s later).
    script = (
        "import asyncio, sys\n"
        "from functools import partial\n"
        "from pathlib import Path\n"
        "from streams.parse_pool import ParsePool\n"
        "from streams.pipeline import route_params\n"
        "from streams.settings import Settings\n"
        "from tests.streams.parse_routes import dies_sending_its_result_once\n"
        "from tests.streams.test_parse_pool import NOW, _value\n"
        "async def main():\n"
        "    route = partial(dies_sending_its_result_once, Path(sys.argv[1]))\n"
        "    pool = ParsePool(route_params(Settings()), 2, 10.0, route)\n"
        "    batches = [[(_value(i), i) for i in range(40)], [(_value(i), i) for i in range(40, 80)]]\n"
        "    try:\n"
        "        routed = await asyncio.gather(*(pool.route(b, NOW) for b in batches))\n"
        "    finally:\n"
        "        pool.close(kill=True)\n"
        "    print([r.rejection for b in routed for r in b if r.rejection], flush=True)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert (tmp_path / "died").exists()
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr


def test_parse_processes_exit_when_their_worker_is_killed() -> None:
    script = (
        "import asyncio, sys\n"
        "from datetime import UTC, datetime\n"
        "from streams.parse_pool import ParsePool\n"
        "from streams.pipeline import route_params\n"
        "from streams.settings import Settings\n"
        "pool = ParsePool(route_params(Settings()), 2)\n"
        "asyncio.run(pool.route([(b'x', 0), (b'y', 1)], datetime.now(UTC)))\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], cwd=PROJECT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as worker:  # closes its pipes on the way out
        try:
            assert worker.stdout is not None and worker.stdout.readline() == b"ready\n"
            children = _children(worker.pid)
            assert len(children) >= 2
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(Path(f"/proc/{c}").exists() for c in children):
                time.sleep(0.2)
            alive = [
                c
                for c in children
                if Path(f"/proc/{c}/stat").exists() and " Z " not in Path(f"/proc/{c}/stat").read_text()
            ]
            assert alive == [], "parse processes outlived their worker"
        finally:
            worker.kill()  # a no-op once it is reaped
