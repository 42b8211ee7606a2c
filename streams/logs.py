"""Log setup: plain text or one JSON object per line, with the document's path and axis as fields."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from sinks.state import Position

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Everything a LogRecord carries by itself; the rest came in through `extra=` and becomes a JSON field.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}


def doc_context(path: str, axis: str | None = None, position: Position | None = None) -> dict[str, Any]:
    """The `extra=` of every log line about a document: its path, its axis, where its record sits."""
    ctx: dict[str, Any] = {"path": path}
    if axis:
        ctx["axis"] = axis
    if position is not None:
        ctx.update(topic=position.topic, partition=position.partition, offset=position.offset)
    return ctx


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (UTC), level, logger, message, the `extra=` fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(*, log_json: bool, level: str) -> None:
    """Root logging for the CLI commands (the worker's Faust logging gets `faust_logging_config`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_json else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def faust_logging_config(*, log_json: bool, level: str) -> dict[str, Any] | None:
    """A dictConfig replacing mode's coloured handler with the JSON one; None keeps Faust's own."""
    if not log_json:
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {
            "default": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"}
        },
        "root": {"level": level, "handlers": ["default"]},
    }
