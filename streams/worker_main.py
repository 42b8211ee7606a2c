"""Start the Faust worker with predigest's logging: one format per mode, and nothing printed around it."""

from __future__ import annotations

import logging
import signal
from typing import IO, Any

from faust import worker

from sinks.clock import Clock
from streams import heap, logs, stopping
from streams.settings import Settings

log = logging.getLogger("faust.worker")


class Worker(worker.Worker):
    """mode's worker prints to the terminal (`-INT- -INT-…`, a spinner on a TTY); here every word is a log record,
    so a JSON log stays JSON and a text log keeps its one format."""

    def _say(self, msg: str, file: IO[str] | None = None, end: str = "\n", **kwargs: Any) -> None:
        text = msg.strip()
        if not text:
            return
        if text.startswith("-INT-"):
            text = "interrupted (SIGINT): stopping"
        log.warning("%s", text) if file is self.stderr else log.info("%s", text)

    def install_signal_handlers(self) -> None:
        answered = stopping.sigint_answered()
        super().install_signal_handlers()
        # Started with SIGINT ignored (`predigest run &` in a script): a Ctrl-C is for the foreground job.
        if not answered:
            self.loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Faust stops on SIGTERM from its loop, which a long computation keeps busy, or a step of its stop that
        # waits with no bound (an agent's end): exit anyway, later, saying which step it was in.
        stopping.hard_exit_after_signal(stopping.WORKER_STOP_SECONDS, lambda: _stop_step(self.app))

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        self.spinner = None  # its handler writes spinner frames between the log lines


def _stop_step(app: Any) -> str:
    return str(getattr(app, "stop_step", "stopping"))


def run(settings: Settings, clock: Clock) -> None:
    """Build the app on these settings (a concrete bootstrap, checked topics) and run it until stopped."""
    from streams.app import create_app

    heap.keep_for_ingest()
    app = create_app(settings, clock)
    logging_config = logs.faust_logging_config(log_json=settings.log_json, level=settings.log_level)
    Worker(app, loglevel=settings.log_level, logging_config=logging_config).execute_from_commandline()
