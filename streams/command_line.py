"""The `predigest` command: watch, worker, flush, status, check, explain, rebuild, once, run, backfill, dead,
kafka."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.errors import SinkError
from streams import commands, kafka_local, logs, preflight, stopping, web_guard
from streams.dead_args import add_parser as add_dead_parser
from streams.errors import StoppedBySignalError, StreamsError, TerminatedError
from streams.settings import Settings, load_settings
from streams.worker_process import load_dumped_settings

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

log = logging.getLogger("predigest")

COMPRESSIONS = ("zstd", "lz4", "gzip", "snappy", "none")
COMPRESSION_HELP = "of the raw records (default: none; zstd for a remote broker or a tight disk)"

# The ports a command listens on, checked before anything starts (a broker, a topic, a process).
_PORTS = {
    "worker": ("web_port",),
    "watch": ("watcher_metrics_port",),
    "run": ("web_port", "watcher_metrics_port"),
}
_NEEDS_ROOT = ("run", "watch", "backfill", "once")


def _settings(args: argparse.Namespace) -> Settings:
    if getattr(args, "settings_json", None):
        return load_dumped_settings(Path(args.settings_json))
    overrides: dict[str, Any] = {}
    if getattr(args, "root", None):
        overrides["root"] = Path(args.root)
    if args.command == "once":
        overrides["out_dir"] = Path(args.out)
    return load_settings(Path(args.config) if args.config else None, **overrides)


def _common() -> argparse.ArgumentParser:
    """--config and -v, accepted after the subcommand as well as before it."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        help="TOML config file (PREDIGEST_* environment variables override it); see examples/predigest.toml",
    )
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS)
    return common


def _parser_class(caught: Sequence[int]) -> type[argparse.ArgumentParser]:
    """argparse's parser, its subcommands' included, silent once a signal came (`caught`): the signal's line is
    the answer, not the help or a usage error."""

    class Parser(argparse.ArgumentParser):
        def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
            if not caught:
                super()._print_message(message, file)

    return Parser


def _parser(caught: Sequence[int] = ()) -> argparse.ArgumentParser:
    p = _parser_class(caught)(prog="predigest", description=__doc__)
    p.add_argument(
        "--config",
        help="TOML config file (PREDIGEST_* environment variables override it); see examples/predigest.toml",
    )
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)  # a child of once/run: die with it
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    common = [_common()]
    w = sub.add_parser("watch", parents=common, help="publish the root's files to Kafka, continuously")
    w.add_argument("--root")
    sub.add_parser("worker", parents=common, help="run the Faust worker (agents, close timer, web views)")
    f = sub.add_parser(
        "flush", parents=common, help="ask the owning worker for the briefing of the window ending now"
    )
    f.add_argument("--axis", required=True)
    f.add_argument("--end", help="window end, ISO 8601 with offset (default: now)")
    st = sub.add_parser(
        "status",
        parents=common,
        help="per axis: window, documents, duplicates, last briefing, lag (asks the workers)",
    )
    st.add_argument(
        "--worker",
        action="append",
        metavar="URL",
        help="a worker's web address, repeatable (default: http://<web_host>:<web_port>)",
    )
    st.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser(
        "rebuild",
        parents=common,
        help="stop-the-world: set the stopped worker's state aside and replay the topics",
    )
    o = sub.add_parser(
        "once", parents=common, help="run the pipeline over a root once and write one briefing"
    )
    o.add_argument("--root", required=True)
    o.add_argument("--axis", required=True)
    o.add_argument("--end", required=True)
    o.add_argument("--out", required=True)
    o.add_argument("--trigger", choices=("close", "flush"), default="close")
    o.add_argument("--timeout", type=float, default=180.0)
    r = sub.add_parser(
        "run", parents=common, help="watcher + worker on a root, flush every axis, keep running"
    )
    r.add_argument("--root")
    r.add_argument("--end", help="window end of the first flush (default: now)")
    r.add_argument("--exit", action="store_true", help="stop after the first briefings")
    b = sub.add_parser(
        "backfill", parents=common, help="publish a large archive to Kafka fast, with a progress bar"
    )
    b.add_argument("--root", required=True)
    # The default is streams.backfill.DEFAULT_COMPRESSION's, not imported: the CLI starts without aiokafka.
    b.add_argument("--compression", choices=COMPRESSIONS, default="none", help=COMPRESSION_HELP)
    b.add_argument(
        "--no-progress", action="store_true", help="no bar (it is also off when stderr is no terminal)"
    )
    c = sub.add_parser(
        "check",
        parents=common,
        help="is all ready? config, root, living documents, unstamped notes, ports, Kafka (exit 1 if not)",
    )
    c.add_argument("--root")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    e = sub.add_parser(
        "explain",
        parents=common,
        help="what the latest briefing of each axis said about one note: score, terms, duplicate, increment",
    )
    e.add_argument("path", help="the note (under the root, or root-relative as briefings name it)")
    e.add_argument("--axis", help="one axis (default: every configured axis)")
    e.add_argument("--root")
    e.add_argument("--json", action="store_true", help="machine-readable output")
    add_dead_parser(sub, common)
    k = sub.add_parser("kafka", parents=common, help="the local broker: start | stop")
    k.add_argument("action", choices=("start", "stop"))
    return p


def main(argv: list[str] | None = None, caught: Sequence[int] = ()) -> int:
    """Run the command; `caught` fills with the signals that came while `streams.launch` imported it (its handler
    remembers them until this one's replace it): then one line and 128 + the first, nothing started."""
    if caught:  # before argparse, whose help or usage error would exit 0 or 2 over the signal
        return _stopped_while_starting(caught[0])
    try:
        args = _parser(caught).parse_args(argv)
    except SystemExit:
        if caught:  # came while argparse parsed: its help or usage error, unprinted, gives way to it
            return _stopped_while_starting(caught[0])
        raise
    if args.parent_pid:
        stopping.exit_with_parent(args.parent_pid)
    level = "DEBUG" if args.verbose else "INFO"
    logs.configure(log_json=False, level=level)
    try:
        # Inside the try: a signal from the moment these handlers are in place is this try's one line.
        stopping.raise_on_signals()
        if caught:
            raise StoppedBySignalError(caught[0], " while starting; nothing was started")
        settings = _settings(args)
        if settings.log_json:
            logs.configure(log_json=True, level=level)
        return _dispatch(args, settings, SYSTEM_CLOCK)
    except StoppedBySignalError as exc:
        log.error("%s", exc)
        return 128 + exc.signum
    except (KeyboardInterrupt, TerminatedError, RuntimeError) as exc:  # before the command's own handler
        if (signum := stopping.signal_behind(exc)) is None:
            raise
        log.error("%s", StoppedBySignalError(signum))
        return 128 + signum
    except (StreamsError, SinkError, TimeoutError) as exc:
        log.error("%s", exc)
        return 2
    except ValidationError as exc:  # settings handed over by a parent process (its own were checked)
        log.error("configuration error: %s", exc.errors()[0]["msg"])
        return 2


def _stopped_while_starting(signum: int) -> int:
    logs.configure(log_json=False, level="INFO")  # the settings, which may ask for JSON, are not read
    log.error("%s", StoppedBySignalError(signum, " while starting; nothing was started"))
    return 128 + signum


def _dispatch(args: argparse.Namespace, settings: Settings, clock: Clock) -> int:
    """Every argument and setting is checked here, before anything is started (a broker, a topic, a process)."""
    command = args.command
    if command == "kafka":
        return commands.kafka(settings, args.action)
    if command == "status":  # HTTP only: no broker needed
        return commands.status(settings, args.worker, args.json)
    if command == "dead":
        from streams.dead_admin import run as run_dead

        return run_dead(args, settings, kafka_local.resolve_bootstrap)
    if command == "explain":  # reads the briefings as written: no broker, no worker
        return commands.explain(settings, args.path, args.axis, args.json)
    if command == "check":  # reports what the other commands refuse: never starts anything
        return commands.check(settings, Path(args.config) if args.config else None, args.json)
    end = commands.parse_end(getattr(args, "end", None), clock)
    if command == "flush":
        return commands.flush(settings, args.axis, end, clock)
    from sinks import file_claim  # imports DuckDB: only for the commands below, which open its files

    file_claim.name_holder(command)  # a process its claim refuses names it (`predigest backfill`)
    if command in ("run", "worker", "once"):
        web_guard.exposure_warning(settings)  # its worker would refuse to start: say so before anything runs
    if command in _NEEDS_ROOT:
        preflight.require_root(settings)  # an empty briefing is no answer to a mistyped root
    preflight.require_ports(settings, *_PORTS.get(command, ()))
    if command == "once":
        request = commands.OnceRequest(args.axis, end, args.trigger, args.timeout)
        return commands.once(settings, request, clock)
    if command == "run":
        return commands.run(settings, commands.RunRequest(end, bool(args.end), args.exit), clock)
    if command == "watch":
        return commands.watch(settings)
    if command == "backfill":
        return commands.backfill(settings, args.compression, not args.no_progress and sys.stderr.isatty())
    if command == "rebuild":
        return commands.rebuild(settings, clock)
    return commands.run_worker(settings, clock)
