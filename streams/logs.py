"""Log setup: plain text or one JSON object per line, with the document's path and axis as fields.

A record is one line whatever a document's path or text holds: in text logs, arguments (paths, document
text, errors) show a newline as `\\n` and a bidi control as `\\u202e`; the lines a log call writes on
purpose (a traceback, Faust's tables) follow indented, so no line of them can pass for a record. JSON logs
get the same from `json.dumps`.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from numbers import Number
from types import TracebackType
from typing import TYPE_CHECKING, Any

from processors.inert import LINE_BREAKING, one_line, visible

if TYPE_CHECKING:  # an annotation: the state's modules (DuckDB) are not every command's
    from _typeshed import SupportsWrite

    from sinks.state import Position

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTINUED = "    "  # starts every line of a record after its first
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


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


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
        # json.dumps leaves U+2028, bidi and C1 controls raw (JSON allows them); escaped, the line is the same
        # JSON, but no line splitter breaks it and no terminal reorders it. They occur only inside strings.
        return LINE_BREAKING.sub(_json_escape, json.dumps(out, ensure_ascii=False, default=str))


class _Shown:
    """A log argument printed on one line, whether `%s` or `%r` prints it."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return one_line(str(self.value))

    def __repr__(self) -> str:
        return one_line(repr(self.value))


# Left as they are: numbers (`%d` needs them), containers (`%s` shows their strings by repr, escaped; mode
# turns Faust's topic sets and maps into tables); anything else is shown on one line.
_AS_IS = (Number, Mapping, list, tuple, set, frozenset, type(None))


def _arg(value: object) -> object:
    return value if isinstance(value, _AS_IS) else _Shown(value)


def _one_line_args(record: logging.LogRecord) -> logging.LogRecord:
    """A copy of `record` whose arguments and `extra=` strings cannot break its line."""
    copy = logging.makeLogRecord(record.__dict__)
    if isinstance(record.args, Mapping):
        copy.args = {k: _arg(v) for k, v in record.args.items()}
    elif record.args:
        copy.args = tuple(_arg(v) for v in record.args)
    for key, value in record.__dict__.items():
        if key not in _STANDARD and isinstance(value, str):
            setattr(copy, key, one_line(value))
    copy.exc_text = None  # formatted again, by formatException below
    return copy


def _indented(text: str) -> str:
    return "\n".join(CONTINUED + visible(line) for line in text.splitlines())


class OneRecordPerLine(logging.Formatter):
    """A text formatter whose every record starts a line and whose every other line is indented."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(_one_line_args(record))

    def formatMessage(self, record: logging.LogRecord) -> str:
        # Any line break counts (splitlines: CR, VT, FF, NEL, U+2028 …), as some viewer will break there.
        first, *rest = record.message.splitlines() or [""]
        record.message = visible(first) + "".join(f"\n{CONTINUED}{visible(line)}" for line in rest)
        return super().formatMessage(record)

    def formatException(
        self, ei: tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
    ) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))


class TextFormatter(OneRecordPerLine):
    """The CLI's text lines: `TEXT_FORMAT`, one record per line."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)


# Below DEBUG the libraries say only what went wrong: their INFO lines (every service starting and stopping,
# every subscription table) buried the ones an operator needs. The worker's own start, Ready and stop stay.
_LIBRARY_LEVELS = {"faust": "WARNING", "mode": "WARNING", "aiokafka": "WARNING", "faust.worker": "INFO"}


def library_levels(level: str) -> dict[str, str]:
    """Logger name → level for the libraries, at the operator's `level`."""
    if logging.getLevelName(level) <= logging.DEBUG:
        return {}
    return {name: max(lib, level, key=logging.getLevelName) for name, lib in _LIBRARY_LEVELS.items()}


def configure(*, log_json: bool, level: str) -> None:
    """Root logging for the CLI commands (the worker's Faust logging gets `faust_logging_config`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_json else TextFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for name, lib_level in library_levels(level).items():
        logging.getLogger(name).setLevel(lib_level)


@contextmanager
def stderr_lines_to(stream: SupportsWrite[str]) -> Iterator[None]:
    """The root handlers that write to stderr write to `stream` while inside (a progress bar's, above it)."""
    # They hold the stderr of their making: rich's redirection of sys.stderr while its bar is live misses them.
    before = sys.stderr
    moved = [
        h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler) and h.stream is before
    ]
    for handler in moved:
        handler.setStream(stream)
    try:
        yield
    finally:  # also when a signal cancels the command, or an error ends it
        for handler in moved:
            handler.setStream(before)


def faust_logging_config(*, log_json: bool, level: str) -> dict[str, Any]:
    """The worker's dictConfig: the CLI's own formats (JSON, or TEXT_FORMAT with Faust's tables) on stderr.

    One format per mode, wherever a line comes from (predigest, Faust, mode, aiokafka), and on the stream the
    other commands log to: an operator reads one terminal, a shipper parses one kind of line.
    """
    if log_json:
        formatter: dict[str, Any] = {"()": f"{__name__}.JsonFormatter"}
    else:
        formatter = {
            "()": "streams.faust_text_log.FaustTextFormatter",
            "format": TEXT_FORMAT,
            "stream": sys.stderr,
        }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level, "handlers": ["default"]},
        "loggers": {name: {"level": lib} for name, lib in library_levels(level).items()},
    }
