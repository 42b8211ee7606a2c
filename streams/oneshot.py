"""`predigest once` and `predigest run`: the real Kafka pipeline driven from one command."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from processors.briefing_names import briefing_basename
from processors.models import Trigger
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.settings import Settings
from streams.stopping import STOP_GRACE_SECONDS, Stopping, install_stop, sigint_answered, until_stopped
from streams.watcher import publish_root
from streams.worker_process import STOP_CHILD_SECONDS, spawn_worker, stop_process

if TYPE_CHECKING:
    from sinks.ledger import Ledger
    from streams.commands import RunRequest

log = logging.getLogger(__name__)
T = TypeVar("T")

INGEST_STAGES = ("raw", "documents")
# `once` and `run` exit hard this long after a signal: past their worker's stop, with time for their own.
ONESHOT_GRACE_SECONDS = STOP_CHILD_SECONDS + STOP_GRACE_SECONDS


def briefing_path(settings: Settings, axis: str, end: datetime, trigger: Trigger) -> Path:
    return settings.out_dir / axis / f"{briefing_basename(axis, end, trigger, settings.tz)}.md"


async def wait_ingested(settings: Settings, timeout: float) -> None:
    """Wait until the worker group has consumed everything on the ingest topics."""
    topics = [settings.kafka.topic(s) for s in INGEST_STAGES]
    await kafka_io.wait_caught_up(settings, settings.app_id, topics, timeout)


async def once(settings: Settings, axis: str, end: datetime, trigger: Trigger, timeout: float) -> Path:
    """Scan the root into the topics, let a worker ingest it, close the window, wait for the briefing.

    SIGINT/SIGTERM stop it (StoppedBySignalError), its worker with it (`stop_worker`), and a second signal at
    once; the worker dies with this process in any case.
    """
    stop = asyncio.Event()
    stopping = install_stop(stop, ONESHOT_GRACE_SECONDS, again_exits=True)
    return await until_stopped(_once(settings, axis, end, trigger, timeout, stop, stopping), stop, stopping)


async def _once(
    settings: Settings,
    axis: str,
    end: datetime,
    trigger: Trigger,
    timeout: float,
    stop: asyncio.Event,
    stopping: Stopping,
) -> Path:
    await kafka_io.ensure_topics(settings)
    count = await publish_root(settings, follow=False, stop=stop)
    log.info("published %d file(s) from %s", count, settings.root)
    worker = spawn_worker(settings, settings.state_dir, with_parent=True)
    stopping.before_exit = worker.kill
    try:
        await wait_ingested(settings, timeout)
        await send_command(settings, axis, trigger, end)
        await await_briefing(settings, axis, end, trigger, timeout)
    finally:
        stop_worker(worker, stopping)
        await drop_run_topics(settings)
    return briefing_path(settings, axis, end, trigger)


def stop_worker(worker: subprocess.Popen[bytes], stopping: Stopping) -> int:
    """SIGTERM to the worker, SIGKILL if it still runs past its own clean stop (after a signal; 30 s else); says so
    after a signal, where an operator waits at a terminal."""
    if stopping.signum is None:
        return stop_process(worker, timeout=30.0)
    if worker.poll() is None:
        log.info(
            "stopping the worker (up to %.0f s; %s again to kill it now)", STOP_CHILD_SECONDS, _stop_key()
        )
    return stop_process(worker, timeout=STOP_CHILD_SECONDS)


async def drop_run_topics(settings: Settings) -> None:
    """The run's own topics (`<prefix>-once-<id>.*` and Faust's `<app_id>-__assignor-…`) are of no further use."""
    prefixes = (f"{settings.kafka.topic_prefix}.", f"{settings.app_id}-")
    try:
        names = await kafka_io.delete_topics_of(settings, prefixes)
    except Exception as exc:  # the briefing is written: leftover topics are worth a line, not a failure
        log.warning("could not delete this run's topics (%s*): %s", prefixes[0], exc)
        return
    log.info("deleted this run's %d topic(s): %s", len(names), ", ".join(names))


async def watch(settings: Settings, ledger: Ledger) -> None:
    """`predigest watch` on its `ledger` (closed here): publish the root continuously until SIGINT/SIGTERM (a
    second one exits at once, as `once` and `run` do)."""
    stop = asyncio.Event()
    install_stop(stop, again_exits=True)
    await publish_root(settings, follow=True, stop=stop, ledger=ledger)


def _a_note(root: Path) -> str:
    """A writer's note of the root to name in the hint (not an axis's briefing), or the inbox itself."""
    notes = sorted(p for p in (root / "inbox").glob("*/*.md") if "-e1prep" not in p.name)
    return str(notes[0]) if notes else str(root / "inbox")


def flush_hint(settings: Settings, request: RunRequest) -> str:
    """How to see an edit: a configured axis, and for an archive's window a later end (each end is briefed once;
    a flush without an end asks for now, which an archive's notes are far from)."""
    query = f"axis={settings.axes[0].name}"
    if request.archive:
        query += "&end=" + quote((request.end + timedelta(minutes=1)).isoformat())
    auth = ' -H "Authorization: Bearer $PREDIGEST_TOKEN"' if settings.token else ""
    url = f"http://{settings.web_host}:{settings.web_port}/flush?{query}"
    later = ", a later end each time" if request.archive else ""
    return (
        f"to brief an edit: change a note (e.g. {_a_note(settings.root)}), then flush again{later}: "
        f"curl -X POST -H 'X-Predigest-Request: 1'{auth} '{url}'"
    )


async def run(
    settings: Settings, request: RunRequest, ledger: Ledger, stopping: Stopping | None = None
) -> None:
    """The whole pipeline on one root: worker + watcher (on `ledger`, closed here), a flush of every axis, then
    keep running.

    The hard exit a signal arms bounds the watcher's and the worker's stop; `stopping` (filled in here) lets the
    caller disarm it once this returns, before the local broker's stop, which has a bound of its own."""
    try:
        await kafka_io.ensure_topics(settings)
        # Its log in this terminal; it dies with this process, whatever happens to it.
        worker = spawn_worker(settings, settings.state_dir, terminal=True, with_parent=True)
    except BaseException:
        ledger.close(write=False)  # nothing acknowledged yet
        raise
    stop = asyncio.Event()
    kill = _kill_and_name_broker(worker) if request.broker_started else worker.kill
    stopping = install_stop(stop, ONESHOT_GRACE_SECONDS, kill, again_exits=True, state=stopping)
    watcher = asyncio.create_task(publish_root(settings, follow=True, stop=stop, ledger=ledger))
    end, timeout = request.end, request.timeout
    try:
        await until_stopped(_beside(watcher, _first_briefings(settings, end, timeout)), stop, stopping)
        log.info("briefings in a browser: http://%s:%d/browse", settings.web_host, settings.web_port)
        log.info("worker metrics: http://%s:%d/metrics", settings.web_host, settings.web_port)
        log.info("watcher metrics: http://%s:%d/metrics", settings.web_host, settings.watcher_metrics_port)
        log.info("%s", flush_hint(settings, request))
        if not request.exit_after:
            also = " and the local Kafka broker this run started" if request.broker_started else ""
            log.info("running; %s stops the watcher and the worker%s", _stop_key(), also)
            await _beside(watcher, stop.wait())
    finally:
        stop.set()
        try:
            await watcher  # its ledger's refused last write raises: the worker is stopped all the same
        finally:
            stop_worker(worker, stopping)


async def _beside(watcher: asyncio.Task[int], work: Awaitable[T]) -> T:
    """`work`'s result, or the watcher's error as soon as it ends in one (its ledger held by a `watch` on this
    state): the run does not go on, and brief, without its watcher."""
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task not in done:
            watcher.result()  # its error: it ends without one only at the stop, which ends `work` too
        return await task
    finally:
        if not task.done():  # the watcher's error, or a signal's cancellation of this one: `work` stops too
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _stop_key() -> str:
    """What stops this command: Ctrl-C, unless it was started with SIGINT ignored (`predigest run &` in a script)."""
    return "Ctrl-C" if sigint_answered() else "SIGTERM"


def _kill_and_name_broker(worker: subprocess.Popen[bytes]) -> Callable[[], None]:
    """The worker killed at a second Ctrl-C; the broker this run started is left (its stop waits up to 30 s), named."""

    def kill() -> None:
        worker.kill()
        log.warning("the local Kafka broker this run started keeps running: `predigest kafka stop` stops it")

    return kill


async def _first_briefings(settings: Settings, end: datetime, timeout: float) -> None:
    await asyncio.sleep(2)  # the watcher's startup scan goes first
    await wait_ingested(settings, timeout)
    for axis in settings.axes:
        await send_command(settings, axis.name, "flush", end)
    for axis in settings.axes:
        await await_briefing(settings, axis.name, end, "flush", timeout)
        log.info("briefing: %s", briefing_path(settings, axis.name, end, "flush").resolve())
