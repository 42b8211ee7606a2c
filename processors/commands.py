"""Whether a close/flush command may be acted on: its axis, its window end and its window, checked in one place."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args
from zoneinfo import ZoneInfo

from processors.models import ControlCommand
from processors.window import window_bounds

CommandRefusal = Literal[
    "unknown_axis",  # no configured axis has this name
    "naive_end",  # the window end carries no UTC offset
    "end_too_old",  # further back than the configured reach
    "end_too_far_ahead",  # further ahead than the configured reach
    "window_out_of_range",  # the window's bounds or local times fall outside the calendar
]
COMMAND_REFUSALS: tuple[CommandRefusal, ...] = get_args(CommandRefusal)


@dataclass(frozen=True)
class CommandLimits:
    """What a command may ask for: one of these axes, a window of this length ending within reach of now."""

    axes: tuple[str, ...]
    window: timedelta
    zone: ZoneInfo
    max_past: timedelta
    max_future: timedelta


@dataclass(frozen=True)
class Refused:
    """Why a command is not acted on: a code for metrics and machines, a line for the operator."""

    reason: CommandRefusal
    detail: str


def check_end(end: datetime, limits: CommandLimits, now: datetime) -> Refused | None:
    """None when a window ending at `end` can be briefed now; else why not."""
    if end.tzinfo is None or end.utcoffset() is None:
        return Refused("naive_end", f"end {end.isoformat()} needs a UTC offset, e.g. +08:00")
    # A difference of two aware datetimes never overflows, whatever the calendar edge.
    if now - end > limits.max_past:
        return Refused(
            "end_too_old",
            f"end {end.isoformat()} is more than {_days(limits.max_past)} before now "
            "(flush_max_past_days; `predigest once` re-emits older windows on topics of its own)",
        )
    if end - now > limits.max_future:
        return Refused(
            "end_too_far_ahead",
            f"end {end.isoformat()} is more than {_hours(limits.max_future)} after now (flush_max_future_hours)",
        )
    try:
        bounds = window_bounds(end, limits.window)
        for t in (bounds.start, bounds.end):
            t.astimezone(limits.zone), t.astimezone(UTC)
    except (OverflowError, ValueError):
        return Refused("window_out_of_range", f"the window ending {end.isoformat()} is outside the calendar")
    return None


def check_command(command: ControlCommand, limits: CommandLimits, now: datetime) -> Refused | None:
    """None when the command may be acted on; else the first reason it may not."""
    if command.axis not in limits.axes:
        return Refused(
            "unknown_axis", f"axis {command.axis!r} is not configured (configured: {', '.join(limits.axes)})"
        )
    return check_end(command.end, limits, now)


def _days(span: timedelta) -> str:
    return f"{span / timedelta(days=1):g} day(s)"


def _hours(span: timedelta) -> str:
    return f"{span / timedelta(hours=1):g} hour(s)"
