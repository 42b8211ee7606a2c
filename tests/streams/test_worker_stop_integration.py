"""A worker's clean stop on the real broker (SIGTERM): its agents stop taking work, the batches in flight end or stay
unacked, then the parse processes and the state close, checkpointed; a restart stores every note once."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from processors.briefing_names import briefing_basename
from streams import kafka_io
from streams.backfill import backfill
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import ArxivSettings, Settings
from streams.stop_wait import TAKEN_SECONDS
from streams.stopping import WORKER_STOP_SECONDS
from streams.worker_process import free_port, spawn_worker, stop_process
from tests.arxiv_server import FakeArxiv, Stall, fake_arxiv
from tests.streams.fault_support import (
    WRITERS,
    Faulted,
    assert_each_path_stored_once,
    committed,
    note_path,
    note_text,
    printed_logs_on_failure,
    state_rows,
    with_work_left,
)
from tests.support import async_wait_for, read_topic, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLOSED = "is checkpointed and closed"
END = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))


def _write(root: Path, notes: dict[str, str]) -> set[str]:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return set(notes)


def _wal(s: Settings) -> Path:
    return s.state_file.with_name(s.state_file.name + ".wal")


def _clean(log: Path) -> str:
    """The log of a worker that stopped cleanly: the state closed, no traceback, no hard exit, and no error of a
    parse it dropped (asyncio's `Future exception was never retrieved`: BrokenProcessPool)."""
    text = log.read_text(errors="replace")
    assert CLOSED in text, text[-3000:]
    assert "Traceback" not in text and "exiting now" not in text, text[-3000:]
    assert "never retrieved" not in text, text[-3000:]
    return text


def _logged_seconds(text: str, first: str, then: str) -> float:
    """Seconds between the log's line saying `first` and the next saying `then` (their timestamps)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next(line for line in lines[start:] if then in line)
    return (_stamp(end) - _stamp(lines[start])).total_seconds()


def _stamp(line: str) -> datetime:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)


async def _committed_so_far(s: Settings) -> int:
    try:
        return await committed(s, "documents")
    except KafkaError:  # the group has no coordinator yet
        return 0


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 90) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_sigterm_during_a_backfills_ingest_closes_the_state_and_a_restart_stores_every_note_once(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    async def attempt(per_writer: int) -> Faulted | None:
        return await _stopped_while_ingesting(make_settings, tmp_path / f"{per_writer}-a-writer", per_writer)

    # 3 000 notes to start with: a worker stores ~1 500 a second here, and 600 were all stored before the signal.
    faulted = await with_work_left(attempt, 1000)
    s, workdir = faulted.settings, faulted.workdir
    with running_worker(s, workdir, "worker-2"):
        await wait_ingested(s, 120)
    assert_each_path_stored_once(state_rows(s), faulted.paths)
    _clean(workdir / "worker-2.log")
    assert not _wal(s).exists()


async def _stopped_while_ingesting(
    make_settings: Callable[..., Settings], workdir: Path, per_writer: int
) -> Faulted | None:
    """A worker SIGTERMed once it committed a few records stops cleanly (None: it had stored every note by then)."""
    s = make_settings(  # many small batches: work left when the signal comes
        root=workdir / "root", state_dir=workdir / "state", out_dir=workdir / "out", batch_records=10
    )
    await kafka_io.ensure_topics(s)
    paths = _write(s.root, {note_path(w, i): note_text(w, i) for w in WRITERS for i in range(per_writer)})
    assert (await backfill(s)).published == len(paths)
    log = workdir / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, workdir, name="worker-1")
        try:
            await _until(lambda: _many_committed(s), "three documents records committed")
        finally:
            code = stop_process(worker)  # SIGTERM
        assert code == 0
        text = _clean(log)
    assert text.index("Stopping") < text.index(CLOSED)
    assert not _wal(s).exists(), "a clean stop leaves its rows checkpointed in the file"
    if len({r.path for r in state_rows(s)}) == len(paths):
        return None  # the ingest had ended: the stop tested nothing
    return Faulted(s, paths, workdir)


async def _many_committed(s: Settings) -> bool:
    return await _committed_so_far(s) >= 3


def _large_note(seed: int) -> str:
    """~3.4 MiB of sections, each with an id and figures: ~1.6 s of a parse process's CPU on an idle machine."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10)))
        for _ in range(5000)
    ]
    parts = [
        f"## section {i}\n\n{' '.join(rng.choice(words) for _ in range(12))} arXiv:26{i % 12 + 1:02d}.{i:05d} "
        f"{i}% 3.{i}x\n\n"
        for i in range(25000)
    ]
    return ("# large note\n\n" + "".join(parts))[:3_900_000]


async def test_a_stop_while_a_parse_batch_is_in_flight_loses_nothing_and_logs_no_traceback(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(batch_records=4, parse_processes=1)
    await kafka_io.ensure_topics(s)
    notes = {f"inbox/jay/2026-09-27-0900-small-{i}.md": note_text("jay", i) for i in range(4)}
    notes |= {f"inbox/jay/2026-09-27-1000-large-{i}.md": _large_note(i) for i in range(3)}
    notes |= {f"inbox/jay/2026-09-27-1100-after-{i}.md": note_text("jay", 100 + i) for i in range(8)}
    paths = _write(s.root, notes)
    assert (await backfill(s)).published == len(paths)
    log = tmp_path / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, tmp_path, name="worker-1")
        try:
            # The first batch (the four small notes) acked: the large ones, a batch of their own, route meanwhile.
            await _until(lambda: _raw_committed(s, 4), "the first batch's raw records committed")
        finally:
            code = stop_process(worker)  # SIGTERM
        assert code == 0
        _clean(log)
    with running_worker(s, tmp_path, "worker-2"):
        await wait_ingested(s, 120)
    assert_each_path_stored_once(state_rows(s), paths)
    _clean(tmp_path / "worker-2.log")


# The restart parses the eight large notes again: 70-140 s of wall time at load 10 on two cores, more when loaded.
@pytest.mark.timeout(600)
async def test_a_stop_drops_a_parse_batch_that_would_outlast_its_time_and_a_restart_stores_every_note_once(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(batch_records=8, parse_processes=1)
    paths, large = await _eight_large_backfilled(s)
    log = tmp_path / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, tmp_path, name="worker-1")
        try:
            await _until(lambda: _raw_committed(s, 8), "the first batch's raw records committed")
            await asyncio.sleep(1.0)  # the large notes' batch taken and routing
        finally:
            signalled = time.monotonic()
            code = stop_process(worker)  # SIGTERM
            took = time.monotonic() - signalled
        assert code == 0
        _clean(log)
    assert took < WORKER_STOP_SECONDS / 2, f"the stop took {took:.1f}s"
    assert not _wal(s).exists()
    stored = {r.path for r in state_rows(s)}
    assert set(large) - stored, "the large notes were all parsed: the stop tested nothing"
    with running_worker(s, tmp_path, "worker-2"):
        await wait_ingested(s, 480)
    assert_each_path_stored_once(state_rows(s), paths)
    _clean(tmp_path / "worker-2.log")


# A second worker joining: the first's revocation waits for the large notes' batch (Faust's wait, for every record
# taken), and the SIGTERM comes meanwhile. The restart parses the large notes again, as above.
@pytest.mark.timeout(600)
async def test_a_stop_during_a_revocation_waiting_for_a_parse_batch_exits_in_time_and_loses_nothing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(batch_records=8, parse_processes=1)
    paths, large = await _eight_large_backfilled(s)
    joining = s.model_copy(update={"state_dir": tmp_path / "state-2", "web_port": free_port()})
    log, other = tmp_path / "worker-1.log", tmp_path / "worker-2.log"
    with printed_logs_on_failure(log, other):
        worker = spawn_worker(s, tmp_path, name="worker-1")
        second = None
        try:
            await _until(lambda: _raw_committed(s, 8), "the first batch's raw records committed")
            await asyncio.sleep(1.0)  # the large notes' batch taken and routing
            second = spawn_worker(joining, tmp_path, name="worker-2")
            await _until(lambda: _rebalancing(s), "the group rebalancing")
            await asyncio.sleep(5.0)  # its heartbeat (every 3 s) told the first worker: its revocation waits
        finally:
            signalled = time.monotonic()
            code = stop_process(worker)  # SIGTERM
            took = time.monotonic() - signalled
            if second is not None:
                stop_process(second)
        assert code == 0, log.read_text(errors="replace")[-3000:]
        _clean(log)
    assert took < WORKER_STOP_SECONDS - 2, f"the stop took {took:.1f}s"
    stored = {r.path for r in state_rows(s)}
    assert set(large) - stored, "the large notes were all parsed: the stop tested nothing"
    with running_worker(s, tmp_path, "worker-3"):
        await wait_ingested(s, 480)
    assert_each_path_stored_once(state_rows(s), paths)
    _clean(tmp_path / "worker-3.log")


async def _eight_large_backfilled(s: Settings) -> tuple[set[str], dict[str, str]]:
    """Eight small notes and eight ~3.4 MiB ones on the raw topic: (every path, the large notes)."""
    # The large ones (a batch, or a few as they are fetched): ~13 s of the parse process's CPU on an idle machine,
    # far more on a loaded one; a stop that waited for them would take that long, or exit hard at 15 s.
    await kafka_io.ensure_topics(s)
    notes = {f"inbox/jay/2026-09-27-0900-small-{i}.md": note_text("jay", i) for i in range(8)}
    large = {f"inbox/jay/2026-09-27-1000-large-{i}.md": _large_note(i) for i in range(8)}
    paths = _write(s.root, notes | large)
    assert (await backfill(s)).published == len(paths)
    return paths, large


async def _rebalancing(s: Settings) -> bool:
    """Whether the worker group waits for its members to join again (the first worker's revocation under way)."""
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(s))
    await admin.start()
    try:
        [response] = await admin.describe_consumer_groups([s.app_id])
        return bool(response.groups) and response.groups[0][2] == "PreparingRebalance"
    except KafkaError:  # the group has no coordinator yet
        return False
    finally:
        await admin.close()


async def _raw_committed(s: Settings, wanted: int) -> bool:
    try:
        return await committed(s, "raw") >= wanted
    except KafkaError:  # the group has no coordinator yet
        return False


@pytest.fixture
def arxiv() -> Iterator[FakeArxiv]:
    with fake_arxiv() as fake:
        yield fake


async def test_a_stop_cutting_a_commands_answer_short_leaves_the_command_to_the_restart_which_answers_it(
    make_settings: Callable[..., Settings], arxiv: FakeArxiv, tmp_path: Path
) -> None:
    # arXiv holds the briefing's build (its enrichment) past the signal. The stop waited for its answer 8 s (the
    # bound of its wait for what the agents took), then cancelled it (before that, Faust's stream had acked and the
    # stop committed it); the build is now cancelled as the stop begins, its command left unacked, not waited for.
    api = ArxivSettings(
        enabled=True, base_url=arxiv.url, min_interval_seconds=0.2, max_retries=0, batch_size=1
    )
    s = make_settings(arxiv=api.model_copy(update={"timeout_seconds": 120.0}))
    await kafka_io.ensure_topics(s)
    paths = _write(
        s.root, {"inbox/jay/2026-09-27-1200-ids.md": "# ids\n\nvLLM inference serving arXiv:1605.08386\n"}
    )
    assert (await backfill(s)).published == len(paths)
    arxiv.script.append(Stall(300))  # until released
    end = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))
    log = tmp_path / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, tmp_path, name="worker-1")
        try:
            await wait_ingested(s, 120)
            await send_command(s, "inference", "flush", end)
            await async_wait_for(lambda: bool(arxiv.requests), 120, "the flush's answer asking arXiv")
        finally:
            signalled = time.monotonic()
            code = stop_process(worker)  # SIGTERM
            took = time.monotonic() - signalled
        assert code == 0
        text = _clean(log)
    assert "the flush briefing of inference ending" in text and "was cancelled by the worker's stop" in text
    assert "the stop waited" not in text
    # The worker's own stop, from the signal to its state closed (Faust's teardown after it takes its fixed ~1 s).
    assert _logged_seconds(text, "Signal received", CLOSED) < 3, text[-3000:]
    assert took < TAKEN_SECONDS, f"the stop took {took:.1f}s"
    assert await committed(s, "control") == 0, "the command was committed unanswered"
    arxiv.released.set()
    with running_worker(s, tmp_path, "worker-2"):
        briefing = await await_briefing(s, "inference", end, "flush", 120)
    assert [a.id for a in briefing.arxiv] == ["1605.08386"]
    assert await committed(s, "control") == 1, "the answered command was not acknowledged"


async def test_a_stop_while_a_command_waits_for_the_outboxs_retry_leaves_it_to_the_restart_which_answers_it(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The outbox's retry of a briefing holds its lock (a restored 100k briefing sent again at the start; here its JSON
    # file a FIFO nobody writes, a hung mount) while a command waits for it: the stop waited 8 s for that command.
    s = make_settings(briefing_retry_seconds=1.0, briefing_retry_max_seconds=2.0)
    await kafka_io.ensure_topics(s)
    folder, first, second = s.out_dir / "inference", END, END + timedelta(minutes=1)
    fifo = folder / f"{briefing_basename('inference', first, 'flush', s.tz)}.json"
    folder.parent.mkdir(parents=True)
    folder.write_text(
        "a file where the inference folder should be\n"
    )  # its first briefing waits in the outbox
    _write(s.root, {"inbox/jay/2026-09-27-1200-kv.md": "# vLLM\n\nKV cache serving for LLM inference.\n"})
    assert (await backfill(s)).published == 1
    log = tmp_path / "worker-1.log"
    with printed_logs_on_failure(log):
        worker = spawn_worker(s, tmp_path, name="worker-1")
        held = None
        try:
            await wait_ingested(s, 120)
            await send_command(s, "inference", "flush", first)
            await async_wait_for(
                lambda: "cannot be written" in log.read_text(errors="replace"), 60, "its failure"
            )
            folder.unlink()
            folder.mkdir()
            os.mkfifo(fifo)
            held = await _writer_once_read(fifo)  # the retry reads it, under the outbox's lock, for ever
            await send_command(s, "inference", "flush", second)
            await asyncio.sleep(3.0)  # the command taken, its answer waiting for the lock
            worker.send_signal(signal.SIGTERM)
            await async_wait_for(
                lambda: CLOSED in log.read_text(errors="replace"), TAKEN_SECONDS - 2, "the stop"
            )
        finally:
            if held is not None:
                os.close(held)  # the retry's read ends: it writes the file and is done
            code = stop_process(worker)
        assert code == 0
        text = _clean(log)
    assert _logged_seconds(text, "Signal received", CLOSED) < 3, text[-3000:]
    assert "the stop waited" not in text
    assert await committed(s, "control") == 1, "the command waiting for the outbox was committed unanswered"
    fifo.unlink()  # the mount fixed: the retry's read ended in an error (a FIFO is not rewritten in place)
    with running_worker(s, tmp_path, "worker-2"):
        for end in (first, second):
            await await_briefing(s, "inference", end, "flush", 120)
    assert await committed(s, "control") == 2
    sent = [json.loads(v)["window"]["end"] for _, v in await read_topic(s, "briefings")]
    assert len(sent) == 2 and len(set(sent)) == 2, sent  # each once


async def _writer_once_read(fifo: Path) -> int:
    """A writer's descriptor on `fifo` once a reader has it open (then its reads wait for bytes that never come)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader yet
            assert exc.errno == errno.ENXIO and loop.time() < deadline, exc
            await asyncio.sleep(0.1)
