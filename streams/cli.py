"""The `predigest` command: watch, worker, flush, once, run, kafka."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import socket
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from processors.models import Briefing, ControlCommand, Trigger
from processors.naming import briefing_basename
from sinks.ledger import Ledger
from sinks.metrics import Metrics
from streams import kafka_io, kafka_local
from streams.errors import StreamsError
from streams.settings import Settings, load_settings
from streams.watcher import Watcher

log = logging.getLogger("predigest")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _parse_end(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    end = datetime.fromisoformat(text)
    if end.tzinfo is None:
        raise SystemExit(f"--end {text!r} needs a UTC offset, e.g. 2026-09-27T22:20:00+08:00")
    return end


def dump_settings(settings: Settings, path: Path) -> Path:
    """Write the full settings (secrets included, mode 0600) for a child worker process."""
    data: dict[str, Any] = settings.model_dump(mode="json")
    if settings.token is not None:
        data["token"] = settings.token.get_secret_value()
    if settings.kafka.sasl_password is not None:
        data["kafka"]["sasl_password"] = settings.kafka.sasl_password.get_secret_value()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    if getattr(args, "settings_json", None):
        return Settings(**json.loads(Path(args.settings_json).read_text(encoding="utf-8")))
    extra = {k: v for k, v in overrides.items() if v is not None}
    return load_settings(Path(args.config) if args.config else None, **extra)


# ---- watcher ------------------------------------------------------------------


async def publish_root(settings: Settings, ledger_path: Path, *, follow: bool, stop: asyncio.Event) -> int:
    """Scan the root into `predigest.raw`; with follow, keep watching until stop is set."""
    metrics = Metrics()
    producer = kafka_io.make_producer(settings)
    await producer.start()
    ledger = Ledger(ledger_path)
    try:
        watcher = Watcher(settings, producer, ledger, metrics)
        if follow:
            server = _serve_metrics(settings, metrics)
            try:
                await watcher.run(stop)
            finally:
                if server is not None:
                    server.shutdown()
            return 0
        return await watcher.scan()
    finally:
        ledger.close()
        await producer.stop()


def _serve_metrics(settings: Settings, metrics: Metrics) -> Any:
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(
            settings.watcher_metrics_port, settings.web_host, metrics.registry
        )
    except OSError as exc:
        log.warning(
            "watcher metrics not served on %s:%d: %s", settings.web_host, settings.watcher_metrics_port, exc
        )
        return None
    log.info("watcher metrics at http://%s:%d/metrics", settings.web_host, settings.watcher_metrics_port)
    return server


def _install_stop(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


async def _watch(settings: Settings) -> None:
    await kafka_io.ensure_topics(settings)
    stop = asyncio.Event()
    _install_stop(stop)
    await publish_root(settings, settings.ledger_file, follow=True, stop=stop)


# ---- worker -------------------------------------------------------------------


def _run_worker(settings: Settings) -> None:
    from faust.worker import Worker

    from streams.app import create_app

    asyncio.run(kafka_io.ensure_topics(settings))
    app = create_app(settings)
    Worker(app, loglevel="WARNING").execute_from_commandline()


def _spawn_worker(settings: Settings, workdir: Path) -> subprocess.Popen[bytes]:
    cfg = dump_settings(settings, workdir / "worker-settings.json")
    log_file = (workdir / "worker.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), "worker"],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parents[1],
    )


def _stop_worker(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def send_command(settings: Settings, axis: str, trigger: str, end: datetime) -> ControlCommand:
    command = ControlCommand(
        axis=axis,
        trigger=trigger,
        end=end,
        requested_at=datetime.now(UTC),
        request_id=uuid4().hex,
    )
    producer = kafka_io.make_producer(settings)
    await producer.start()
    try:
        await (
            await producer.send(
                settings.kafka.topic("control"), key=axis.encode(), value=command.model_dump_json().encode()
            )
        )
    finally:
        await producer.stop()
    log.info("sent %s for %s window ending %s", trigger, axis, end.isoformat())
    return command


async def _await_briefing(
    settings: Settings, axis: str, end: datetime, trigger: str, timeout: float
) -> Briefing:
    consumer = kafka_io.make_consumer(settings, settings.kafka.topic("briefings"))
    await consumer.start()
    try:
        async with asyncio.timeout(timeout):
            async for msg in consumer:
                b = Briefing.model_validate_json(msg.value)
                if b.axis == axis and b.window.end == end and b.trigger == trigger:
                    return b
    finally:
        await consumer.stop()
    raise StreamsError(f"no briefing for {axis} ending {end.isoformat()} arrived")


async def _once(settings: Settings, axis: str, end: datetime, trigger: Trigger, timeout: float) -> Path:
    """Scan the root into fresh topics, let a worker ingest it, close the window, wait for the briefing."""
    await kafka_io.ensure_topics(settings)
    count = await publish_root(settings, settings.ledger_file, follow=False, stop=asyncio.Event())
    log.info("published %d file(s) from %s", count, settings.root)
    worker = _spawn_worker(settings, settings.state_dir)
    try:
        await kafka_io.wait_caught_up(
            settings,
            settings.app_id,
            [settings.kafka.topic("raw"), settings.kafka.topic("documents")],
            timeout,
        )
        await send_command(settings, axis, trigger, end)
        await _await_briefing(settings, axis, end, trigger, timeout)
    finally:
        _stop_worker(worker)
    return settings.out_dir / axis / f"{briefing_basename(axis, end, trigger, settings.tz)}.md"


async def _run(settings: Settings, end: datetime, exit_after: bool) -> None:
    """The whole pipeline on one root: worker + watcher, a flush of every axis, then keep running."""
    await kafka_io.ensure_topics(settings)
    worker = _spawn_worker(settings, settings.state_dir)
    stop = asyncio.Event()
    _install_stop(stop)
    watch = asyncio.create_task(publish_root(settings, settings.ledger_file, follow=True, stop=stop))
    try:
        await asyncio.sleep(2)
        await kafka_io.wait_caught_up(
            settings, settings.app_id, [settings.kafka.topic("raw"), settings.kafka.topic("documents")], 180
        )
        for axis in settings.axes:
            await send_command(settings, axis.name, "flush", end)
        for axis in settings.axes:
            target = (
                settings.out_dir / axis.name / f"{briefing_basename(axis.name, end, 'flush', settings.tz)}.md"
            )
            for _ in range(120):
                if target.exists():
                    break
                await asyncio.sleep(0.5)
            log.info("briefing: %s", target.resolve() if target.exists() else f"{target} (not yet written)")
        log.info("worker metrics: http://%s:%d/metrics", settings.web_host, settings.web_port)
        log.info(
            "flush again: curl -X POST 'http://%s:%d/flush?axis=inference'",
            settings.web_host,
            settings.web_port,
        )
        if not exit_after:
            log.info("running; Ctrl-C stops the watcher and the worker")
            await stop.wait()
    finally:
        stop.set()
        await watch
        _stop_worker(worker)


# ---- entry point ----------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="predigest", description=__doc__)
    p.add_argument("--config", help="TOML config file (PREDIGEST_* environment variables override it)")
    p.add_argument("--settings-json", help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("watch", help="publish the root's files to Kafka, continuously")
    w.add_argument("--root")
    sub.add_parser("worker", help="run the Faust worker (agents, close timer, web views)")
    f = sub.add_parser("flush", help="ask the owning worker for the briefing of the window ending now")
    f.add_argument("--axis", required=True)
    f.add_argument("--end", help="window end, ISO 8601 with offset (default: now)")
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
    k = sub.add_parser("kafka", help="the local broker: start | stop")
    k.add_argument("action", choices=("start", "stop"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(args)
    except StreamsError as exc:
        log.error("%s", exc)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "kafka":
        settings = _settings(args)
        if args.action == "start":
            log.info("bootstrap %s", kafka_local.ensure_local_broker(settings))
        else:
            kafka_local.stop_local_broker(settings)
        return 0
    if args.command == "once":
        work = Path(tempfile.mkdtemp(prefix="predigest-once-"))
        run_id = uuid4().hex[:8]
        base = _settings(
            args,
            root=Path(args.root),
            out_dir=Path(args.out),
            close_enabled=False,
            state_dir=work,
            web_port=_free_port(),
        )
        settings = base.model_copy(
            update={
                "app_id": f"{base.app_id}-once-{run_id}",
                "kafka": base.kafka.model_copy(
                    update={"topic_prefix": f"{base.kafka.topic_prefix}-once-{run_id}"}
                ),
            }
        )
        settings = kafka_local.resolve_bootstrap(settings)
        path = asyncio.run(_once(settings, args.axis, _parse_end(args.end), args.trigger, args.timeout))
        log.info("briefing written: %s (and .json)", path)
        return 0
    settings = kafka_local.resolve_bootstrap(
        _settings(args, root=Path(args.root) if getattr(args, "root", None) else None)
    )
    if args.command == "watch":
        asyncio.run(_watch(settings))
    elif args.command == "worker":
        _run_worker(settings)
    elif args.command == "flush":
        asyncio.run(send_command(settings, args.axis, "flush", _parse_end(args.end)))
    elif args.command == "run":
        asyncio.run(_run(settings, _parse_end(args.end), args.exit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
