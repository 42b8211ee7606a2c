"""What each `predigest` subcommand does once its arguments are checked; heavy modules are imported by the
command that needs them, so that a wrong argument is answered in a second."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast
from uuid import uuid4

from processors.models import Trigger
from sinks.clock import Clock
from streams import kafka_local
from streams.errors import StreamsError, TerminatedError
from streams.settings import Settings
from streams.stopping import Stopping
from streams.worker_process import free_port

if TYPE_CHECKING:
    from sinks.ledger import Ledger

log = logging.getLogger("predigest")


def parse_end(text: str | None, clock: Clock) -> datetime:
    if not text:
        return clock.now().replace(microsecond=0)  # the briefing's file name shows the end to the second
    try:
        end = datetime.fromisoformat(text)
    except ValueError as exc:
        raise StreamsError(f"--end {text!r} is not ISO 8601, e.g. 2026-09-27T22:20:00+08:00") from exc
    if end.tzinfo is None:
        raise StreamsError(f"--end {text!r} needs a UTC offset, e.g. 2026-09-27T22:20:00+08:00")
    return end


def archive_settings(
    settings: Settings, axes: list[str], trigger: Trigger, end: datetime, now: datetime
) -> Settings:
    """`once` and `run` brief the --end their operator typed, however far back (an archive's window), so their
    worker's reach extends to it; every other check (axis, the calendar, the future) holds as for a flush."""
    from streams import control

    back = (now - end) / timedelta(days=1)
    if back > settings.flush_max_past_days:
        settings = settings.model_copy(update={"flush_max_past_days": min(math.ceil(back) + 1, 36_600)})
    for axis in axes:
        control.checked_command(settings, axis, trigger, end, now)
    return settings


def run_worker(settings: Settings, clock: Clock) -> int:
    from sinks import state_files
    from streams import kafka_io, worker_main
    from streams.services import state_limits

    # Another schema: one line and exit 2, not restarts; an older one migrated before the worker joins its group.
    # Before the local broker starts: a worker running on the file refuses this one at once.
    state_files.check_version(settings.state_file, state_limits(settings))
    settings = kafka_local.resolve_bootstrap(settings)
    asyncio.run(kafka_io.ensure_topics(settings))
    # The topics decide which axis lives on which partition, whatever kafka.partitions says now.
    partitions = asyncio.run(kafka_io.check_topics(settings))
    settings = settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"partitions": partitions})}
    )
    worker_main.run(settings, clock)
    return 0


def status(settings: Settings, workers: list[str] | None, as_json: bool) -> int:
    from streams import status_table

    urls = workers or [f"http://{settings.web_host}:{settings.web_port}"]
    token = settings.token.get_secret_value() if settings.token else None
    report = status_table.merge(settings, asyncio.run(status_table.fetch(urls, token)))
    text = (
        json.dumps(report, indent=2, ensure_ascii=False)
        if as_json
        else status_table.render(report, settings.tz, settings.lang)
    )
    sys.stdout.write(text + "\n")
    answered = [w for w in report["workers"] if "error" not in w]
    return 0 if answered else 1


def rebuild(settings: Settings, clock: Clock) -> int:
    from sinks.file_claim import check_free
    from sinks.state import STATE
    from streams.rebuild import rebuild as replay_all

    # A worker running on the file refuses the rebuild before a broker starts.
    check_free(settings.state_file, STATE)
    done = asyncio.run(replay_all(kafka_local.resolve_bootstrap(settings), clock))
    log.info(
        "rebuilt %s: %d documents record(s) and %d briefing(s) replayed, %d current document version(s)",
        settings.state_file,
        done.documents_records,
        done.briefings,
        done.documents,
    )
    return 0


def flush(settings: Settings, axis: str, end: datetime, clock: Clock) -> int:
    from streams import control

    command = control.checked_command(settings, axis, "flush", end, clock.now())  # before any broker
    asyncio.run(control.send(kafka_local.resolve_bootstrap(settings), command))
    return 0


@dataclass(frozen=True)
class OnceRequest:
    """What `predigest once` was asked for."""

    axis: str
    end: datetime
    trigger: Trigger
    timeout: float


@dataclass(frozen=True)
class RunRequest:
    """What `predigest run` was asked for: the first flush's window end, whether that end was given (an
    archive's window, as in `make run`), and whether to stop after the first briefings."""

    end: datetime
    archive: bool
    exit_after: bool
    timeout: float = 180.0
    broker_started: bool = False  # the local broker is this run's: Ctrl-C stops it too


def once_settings(settings: Settings) -> Settings:
    """Fresh topics, group and free ports for one run, so a re-run never sees an earlier one's records."""
    run_id = uuid4().hex[:8]
    kafka = settings.kafka.model_copy(update={"topic_prefix": f"{settings.kafka.topic_prefix}-once-{run_id}"})
    return settings.model_copy(
        update={
            "app_id": f"{settings.app_id}-once-{run_id}",
            "kafka": kafka,
            "close_enabled": False,
            "web_port": free_port(),
            "watcher_metrics_port": free_port(),
        }
    )


def once(settings: Settings, request: OnceRequest, clock: Clock) -> int:
    from streams import oneshot

    settings.require_axis(request.axis)
    settings = archive_settings(settings, [request.axis], request.trigger, request.end, clock.now())
    settings = kafka_local.resolve_bootstrap(once_settings(settings))
    workdir = Path(tempfile.mkdtemp(prefix="predigest-once-"))
    settings = settings.model_copy(update={"state_dir": workdir})
    try:
        path = asyncio.run(
            oneshot.once(settings, request.axis, request.end, request.trigger, request.timeout)
        )
    except BaseException:
        if (workdir / "worker.log").exists():
            log.error("the worker's log and state are kept in %s", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    shutil.rmtree(workdir, ignore_errors=True)
    log.info("briefing written: %s (and .json)", path)
    return 0


def run(settings: Settings, request: RunRequest, clock: Clock) -> int:
    from streams import oneshot

    now = clock.now()
    settings = archive_settings(settings, [a.name for a in settings.axes], "flush", request.end, now)
    ledger = _run_ledger(settings)
    if request.archive:
        # The daily close would brief today's window of an archive's root: empty briefings nobody asked for.
        settings = settings.model_copy(update={"close_enabled": False})
        log.info(
            "--end names an archive's window: the daily close is off (run without --end for a live root)"
        )
    local = not settings.kafka.bootstrap
    try:
        started = local and not kafka_local.local_broker_running(settings)
        settings = kafka_local.resolve_bootstrap(settings)
    except BaseException:
        ledger.close(write=False)  # nothing acknowledged yet
        raise
    stopping = Stopping()
    try:
        request = dataclasses.replace(request, broker_started=started)
        asyncio.run(oneshot.run(settings, request, ledger, stopping))
    finally:
        # The hard exit bounded the watcher's and the worker's stop; the broker's stop has its own bound.
        stopping.disarm()
        code = _stop_run_broker(settings, stopping) if started else 0
        if local and not started:
            log.info(
                "the local Kafka broker at %s keeps running (it ran before this run): `predigest kafka stop` stops it",
                settings.kafka.bootstrap,
            )
    return code


def _run_ledger(settings: Settings) -> Ledger:
    """The run's watcher's ledger, claimed (and its worker's state found free) before a broker starts or topics are
    made: a `watch` or a worker running on this root refuses the run at once, for what it holds."""
    from sinks.file_claim import check_free
    from sinks.ledger import Ledger
    from sinks.state import STATE

    ledger = Ledger(settings.ledger_file)
    try:
        check_free(settings.state_file, STATE)
    except BaseException:
        ledger.close(write=False)
        raise
    return ledger


def _stop_run_broker(settings: Settings, stopping: Stopping) -> int:
    """Stop the local broker a run started; the run's exit code: 0, 128 + a first signal that cut this stop
    short (a second one exits at once), or 1 when the stop did not finish by itself (as `predigest kafka stop`)."""
    stopping.before_exit = _broker_left_stopping
    log.info(
        "stopping the local Kafka broker this run started (up to %.0f s; its data stays in %s)",
        kafka_local.BROKER_STOP_SECONDS,
        settings.kafka_cache,
    )
    signum = stopping.signum
    if kafka_local.stop_local_broker(settings):
        return 0
    return 128 + stopping.signum if stopping.signum is not None and signum is None else 1


def _broker_left_stopping() -> None:
    log.warning(
        "the local Kafka broker this run started may still be stopping: `predigest kafka stop` ends its stop"
    )


def watch(settings: Settings) -> int:
    from sinks.ledger import Ledger
    from streams import kafka_io, oneshot

    # Its ledger first: a second watcher is refused for it, not for a Kafka it cannot reach (nor starts a broker).
    ledger = Ledger(settings.ledger_file)
    try:
        settings = kafka_local.resolve_bootstrap(settings)
        asyncio.run(kafka_io.ensure_topics(settings))
    except BaseException:
        ledger.close(write=False)  # nothing acknowledged yet
        raise
    asyncio.run(oneshot.watch(settings, ledger))
    return 0


def backfill(settings: Settings, compression: str, show: bool) -> int:
    from sinks.file_claim import check_free
    from sinks.ledger import LEDGER
    from streams import backfill as bulk
    from streams import backfill_cli

    check_free(settings.ledger_file, LEDGER)  # a watcher on this root refuses it before a broker starts
    settings = kafka_local.resolve_bootstrap(settings)
    asyncio.run(backfill_cli.run_cli(settings, cast("bulk.Compression", compression), show=show))
    return 0


def check(settings: Settings, config: Path | None, as_json: bool) -> int:
    """Exit 0 when all is well, 1 when a finding must be fixed first (warnings alone do not fail)."""
    from streams import check as checks

    rows = checks.findings(settings, config)
    if as_json:
        text = json.dumps([dataclasses.asdict(r) for r in rows], indent=2, ensure_ascii=False)
    else:
        text = checks.render(rows)
    sys.stdout.write(text + "\n")
    return 1 if any(r.status == "fail" for r in rows) else 0


def explain(settings: Settings, path: str, axis: str | None, as_json: bool) -> int:
    """Exit 0 when a briefing lists the note (for the axis asked, or any), 1 when none does yet."""
    from streams import explain as why

    rel, answers = why.explain(settings, path, axis)
    if as_json:
        body = [
            {"axis": a.axis, "briefing": str(a.briefing) if a.briefing else None, **a.said} for a in answers
        ]
        text = json.dumps({"path": rel, "axes": body}, indent=2, ensure_ascii=False)
    else:
        text = why.render(rel, answers, settings)
    sys.stdout.write(text + "\n")
    return 0 if any(a.briefing for a in answers) else 1


def kafka(settings: Settings, action: str) -> int:
    if action == "start":
        log.info("bootstrap %s", kafka_local.ensure_local_broker(settings))
        return 0
    try:
        stopped = kafka_local.stop_local_broker(settings)
    except KeyboardInterrupt:  # the Ctrl-C reached kafka.sh too: the broker goes on stopping by itself
        log.error(
            "interrupted by SIGINT: the local Kafka broker may still be stopping; `predigest kafka stop` ends it"
        )
        return 128 + signal.SIGINT
    except TerminatedError:  # to this process alone: kafka.sh's stop goes on to its end
        log.error(
            "interrupted by SIGTERM: kafka.sh goes on stopping the local Kafka broker (SIGKILL %d s after its "
            "SIGTERM, its data kept)",
            kafka_local.BROKER_STOP_SECONDS,
        )
        return 128 + signal.SIGTERM
    return 0 if stopped else 1  # its line said why; the broker may still be stopping
