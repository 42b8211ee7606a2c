"""`predigest once` and `predigest run`: the real Kafka pipeline driven from one command."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path

from processors.models import Trigger
from processors.naming import briefing_basename
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.settings import Settings
from streams.stopping import install_stop, until_stopped
from streams.watcher import publish_root
from streams.worker_process import STOP_CHILD_SECONDS, spawn_worker, stop_process

log = logging.getLogger(__name__)

INGEST_STAGES = ("raw", "documents")


def briefing_path(settings: Settings, axis: str, end: datetime, trigger: Trigger) -> Path:
    return settings.out_dir / axis / f"{briefing_basename(axis, end, trigger, settings.tz)}.md"


async def wait_ingested(settings: Settings, timeout: float) -> None:
    """Wait until the worker group has consumed everything on the ingest topics."""
    topics = [settings.kafka.topic(s) for s in INGEST_STAGES]
    await kafka_io.wait_caught_up(settings, settings.app_id, topics, timeout)


async def once(settings: Settings, axis: str, end: datetime, trigger: Trigger, timeout: float) -> Path:
    """Scan the root into the topics, let a worker ingest it, close the window, wait for the briefing.

    SIGINT/SIGTERM stop it within seconds, its worker with it (StoppedBySignalError): the worker gets SIGTERM,
    then SIGKILL if it is still busy a few seconds later, and it dies with this process in any case.
    """
    stop = asyncio.Event()
    stopping = install_stop(stop)
    return await until_stopped(_once(settings, axis, end, trigger, timeout, stop), stop, stopping)


async def _once(
    settings: Settings, axis: str, end: datetime, trigger: Trigger, timeout: float, stop: asyncio.Event
) -> Path:
    await kafka_io.ensure_topics(settings)
    count = await publish_root(settings, follow=False, stop=stop)
    log.info("published %d file(s) from %s", count, settings.root)
    worker = spawn_worker(settings, settings.state_dir, with_parent=True)
    try:
        await wait_ingested(settings, timeout)
        await send_command(settings, axis, trigger, end)
        await await_briefing(settings, axis, end, trigger, timeout)
    finally:
        stop_process(worker, timeout=STOP_CHILD_SECONDS if stop.is_set() else 30.0)
    return briefing_path(settings, axis, end, trigger)


async def watch(settings: Settings) -> None:
    """`predigest watch`: publish the root continuously until SIGINT/SIGTERM."""
    await kafka_io.ensure_topics(settings)
    stop = asyncio.Event()
    install_stop(stop)
    await publish_root(settings, follow=True, stop=stop)


async def run(settings: Settings, end: datetime, exit_after: bool, timeout: float = 180.0) -> None:
    """The whole pipeline on one root: worker + watcher, a flush of every axis, then keep running."""
    await kafka_io.ensure_topics(settings)
    worker = spawn_worker(settings, settings.state_dir, with_parent=True)  # dies with this process, whatever
    stop = asyncio.Event()
    stopping = install_stop(stop, before_exit=worker.kill)
    watcher = asyncio.create_task(publish_root(settings, follow=True, stop=stop))
    try:
        await until_stopped(_first_briefings(settings, end, timeout), stop, stopping)
        log.info("worker metrics: http://%s:%d/metrics", settings.web_host, settings.web_port)
        log.info("watcher metrics: http://%s:%d/metrics", settings.web_host, settings.watcher_metrics_port)
        log.info(
            "flush again: curl -X POST -H 'X-Predigest-Request: 1' 'http://%s:%d/flush?axis=inference'",
            settings.web_host,
            settings.web_port,
        )
        if not exit_after:
            log.info("running; Ctrl-C stops the watcher and the worker")
            await stop.wait()
    finally:
        stop.set()
        await watcher
        stop_process(worker, timeout=STOP_CHILD_SECONDS if stopping.signum else 30.0)


async def _first_briefings(settings: Settings, end: datetime, timeout: float) -> None:
    await asyncio.sleep(2)  # the watcher's startup scan goes first
    await wait_ingested(settings, timeout)
    for axis in settings.axes:
        await send_command(settings, axis.name, "flush", end)
    for axis in settings.axes:
        await await_briefing(settings, axis.name, end, "flush", timeout)
        log.info("briefing: %s", briefing_path(settings, axis.name, end, "flush").resolve())
