"""The `predigest` command: watch, worker, flush, status, rebuild, once, run, backfill, dead, kafka."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

from pydantic import ValidationError

from processors.models import Trigger
from sinks import state_files
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.errors import SinkError
from streams import backfill, control, kafka_io, kafka_local, logs, oneshot, status_table, stopping, web_guard
from streams.dead_admin import add_parser as add_dead_parser
from streams.dead_admin import run as run_dead
from streams.errors import StoppedBySignalError, StreamsError
from streams.rebuild import rebuild
from streams.settings import Settings, load_settings
from streams.worker_process import free_port, load_dumped_settings

log = logging.getLogger("predigest")
WORKER_STOP_GRACE_SECONDS = 15.0


def _parse_end(text: str | None, clock: Clock) -> datetime:
    if not text:
        return clock.now()
    try:
        end = datetime.fromisoformat(text)
    except ValueError as exc:
        raise StreamsError(f"--end {text!r} is not ISO 8601, e.g. 2026-09-27T22:20:00+08:00") from exc
    if end.tzinfo is None:
        raise StreamsError(f"--end {text!r} needs a UTC offset, e.g. 2026-09-27T22:20:00+08:00")
    return end


def _archive_settings(
    settings: Settings, axes: list[str], trigger: Trigger, end: datetime, now: datetime
) -> Settings:
    """`once` and `run` brief the --end their operator typed, however far back (an archive's window), so their
    worker's reach extends to it; every other check (axis, the calendar, the future) holds as for a flush."""
    back = (now - end) / timedelta(days=1)
    if back > settings.flush_max_past_days:
        settings = settings.model_copy(update={"flush_max_past_days": min(math.ceil(back) + 1, 36_600)})
    for axis in axes:
        control.checked_command(settings, axis, trigger, end, now)
    return settings


def _config_problem(exc: ValidationError) -> str:
    """One line for a configuration pydantic refused (it never echoes the input: hide_input_in_errors)."""
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e["loc"])
        what = e["msg"].removeprefix("Value error, ")  # a validator's own message says what to do
        parts.append(f"{where}: {what}" if where else what)
    return "configuration error: " + "; ".join(parts)


def _settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    if getattr(args, "settings_json", None):
        return load_dumped_settings(Path(args.settings_json))
    extra = {k: v for k, v in overrides.items() if v is not None}
    return load_settings(Path(args.config) if args.config else None, **extra)


def _run_worker(settings: Settings, clock: Clock) -> None:
    from faust.worker import Worker

    class _Worker(Worker):
        def install_signal_handlers(self) -> None:
            super().install_signal_handlers()
            # Faust stops on SIGTERM from its loop, which a long computation keeps busy: exit anyway, later.
            stopping.hard_exit_after_signal(WORKER_STOP_GRACE_SECONDS)

    from streams.app import create_app

    state_files.check_version(settings.state_file)  # an older schema: one line and exit 2, not restarts
    asyncio.run(kafka_io.ensure_topics(settings))
    # The topics decide which axis lives on which partition, whatever kafka.partitions says now.
    partitions = asyncio.run(kafka_io.check_topics(settings))
    settings = settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"partitions": partitions})}
    )
    app = create_app(settings, clock)
    logging_config = logs.faust_logging_config(log_json=settings.log_json, level=settings.log_level)
    _Worker(app, loglevel=settings.log_level, logging_config=logging_config).execute_from_commandline()


def _status(settings: Settings, workers: list[str] | None, as_json: bool) -> int:
    urls = workers or [f"http://{settings.web_host}:{settings.web_port}"]
    report = status_table.merge(settings, asyncio.run(status_table.fetch(urls)))
    text = (
        json.dumps(report, indent=2, ensure_ascii=False)
        if as_json
        else status_table.render(report, settings.tz)
    )
    sys.stdout.write(text + "\n")
    answered = [w for w in report["workers"] if "error" not in w]
    return 0 if answered else 1


def _rebuild(settings: Settings, clock: Clock) -> int:
    done = asyncio.run(rebuild(settings, clock))
    log.info(
        "rebuilt %s: %d documents record(s) and %d briefing(s) replayed, %d current document version(s)",
        settings.state_file,
        done.documents_records,
        done.briefings_records,
        done.documents,
    )
    return 0


def _once_settings(args: argparse.Namespace) -> Settings:
    """Fresh topics, group and state for one run, so a re-run never sees an earlier one's records."""
    run_id = uuid4().hex[:8]
    base = _settings(
        args,
        root=Path(args.root),
        out_dir=Path(args.out),
        close_enabled=False,
        state_dir=Path(tempfile.mkdtemp(prefix="predigest-once-")),
        web_port=free_port(),
        watcher_metrics_port=free_port(),
    )
    kafka = base.kafka.model_copy(update={"topic_prefix": f"{base.kafka.topic_prefix}-once-{run_id}"})
    return base.model_copy(update={"app_id": f"{base.app_id}-once-{run_id}", "kafka": kafka})


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="predigest", description=__doc__)
    p.add_argument("--config", help="TOML config file (PREDIGEST_* environment variables override it)")
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)  # a child of once/run: die with it
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("watch", help="publish the root's files to Kafka, continuously")
    w.add_argument("--root")
    sub.add_parser("worker", help="run the Faust worker (agents, close timer, web views)")
    f = sub.add_parser("flush", help="ask the owning worker for the briefing of the window ending now")
    f.add_argument("--axis", required=True)
    f.add_argument("--end", help="window end, ISO 8601 with offset (default: now)")
    st = sub.add_parser(
        "status", help="per axis: window, documents, duplicates, last briefing, lag (asks the workers)"
    )
    st.add_argument(
        "--worker",
        action="append",
        metavar="URL",
        help="a worker's web address, repeatable (default: http://<web_host>:<web_port>)",
    )
    st.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser(
        "rebuild", help="stop-the-world: set the stopped worker's state aside and replay the topics"
    )
    o = sub.add_parser("once", help="run the pipeline over a root once and write one briefing")
    o.add_argument("--root", required=True)
    o.add_argument("--axis", required=True)
    o.add_argument("--end", required=True)
    o.add_argument("--out", required=True)
    o.add_argument("--trigger", choices=("close", "flush"), default="close")
    o.add_argument("--timeout", type=float, default=180.0)
    r = sub.add_parser("run", help="watcher + worker on a root, flush every axis, keep running")
    r.add_argument("--root")
    r.add_argument("--end", help="window end of the first flush (default: now)")
    r.add_argument("--exit", action="store_true", help="stop after the first briefings")
    b = sub.add_parser("backfill", help="publish a large archive to Kafka fast, with a progress bar")
    b.add_argument("--root", required=True)
    b.add_argument("--compression", choices=("zstd", "lz4", "gzip", "snappy", "none"), default="zstd")
    b.add_argument(
        "--no-progress", action="store_true", help="no bar (it is also off when stderr is no terminal)"
    )
    add_dead_parser(sub)
    k = sub.add_parser("kafka", help="the local broker: start | stop")
    k.add_argument("action", choices=("start", "stop"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.parent_pid:
        stopping.exit_with_parent(args.parent_pid)
    logs.configure(log_json=False, level="DEBUG" if args.verbose else "INFO")
    try:
        return _dispatch(args, SYSTEM_CLOCK)
    except StoppedBySignalError as exc:
        log.error("%s", exc)
        return 128 + exc.signum
    except (StreamsError, SinkError, TimeoutError) as exc:
        log.error("%s", exc)
        return 2
    except ValidationError as exc:
        log.error("%s", _config_problem(exc))
        return 2


def _dispatch(args: argparse.Namespace, clock: Clock) -> int:
    if args.command == "kafka":
        settings = _settings(args)
        if args.action == "start":
            log.info("bootstrap %s", kafka_local.ensure_local_broker(settings))
        else:
            kafka_local.stop_local_broker(settings)
        return 0
    if args.command == "once":
        settings = _once_settings(args)
        web_guard.exposure_warning(settings)  # its worker would refuse to start: say so before anything runs
        if settings.log_json:
            logs.configure(log_json=True, level="DEBUG" if args.verbose else "INFO")
        settings.require_axis(args.axis)
        end = _parse_end(args.end, clock)
        settings = _archive_settings(settings, [args.axis], args.trigger, end, clock.now())
        settings = kafka_local.resolve_bootstrap(settings)
        path = asyncio.run(oneshot.once(settings, args.axis, end, args.trigger, args.timeout))
        log.info("briefing written: %s (and .json)", path)
        return 0
    root = Path(args.root) if getattr(args, "root", None) else None
    settings = _settings(args, root=root)
    if settings.log_json:
        logs.configure(log_json=True, level="DEBUG" if args.verbose else "INFO")
    if args.command == "status":  # HTTP only: no broker needed
        return _status(settings, args.worker, args.json)
    if args.command == "dead":
        return run_dead(args, settings, kafka_local.resolve_bootstrap)
    if args.command == "flush":  # refused at the door, before any broker is looked for
        command = control.checked_command(
            settings, args.axis, "flush", _parse_end(args.end, clock), clock.now()
        )
        asyncio.run(control.send(kafka_local.resolve_bootstrap(settings), command))
        return 0
    if args.command in ("run", "worker"):
        web_guard.exposure_warning(settings)  # before any broker or topic is touched
    if args.command == "run":
        end = _parse_end(args.end, clock)
        settings = _archive_settings(settings, [a.name for a in settings.axes], "flush", end, clock.now())
        asyncio.run(oneshot.run(kafka_local.resolve_bootstrap(settings), end, args.exit))
        return 0
    settings = kafka_local.resolve_bootstrap(settings)
    if args.command == "rebuild":
        return _rebuild(settings, clock)
    if args.command == "watch":
        asyncio.run(oneshot.watch(settings))
    elif args.command == "worker":
        _run_worker(settings, clock)
    elif args.command == "backfill":
        asyncio.run(
            backfill.run_cli(settings, args.compression, show=not args.no_progress and sys.stderr.isatty())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
