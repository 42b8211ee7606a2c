"""File names of emitted briefings."""

from __future__ import annotations

from datetime import datetime, tzinfo

from processors.models import Trigger


def briefing_basename(axis: str, end: datetime, trigger: Trigger, zone: tzinfo) -> str:
    """`2026-09-27-inference-e1prep`, or `…-e1prep-flush-2215` for a flush (local date/time of end).

    A flush ending off the minute names its seconds (`-flush-221507`, and `.123456` off the second): two flushes
    in one minute are two emissions, and the second must not overwrite the first's files.
    """
    local = end.astimezone(zone)
    base = f"{local:%Y-%m-%d}-{axis}-e1prep"
    if trigger != "flush":
        return base
    at = f"{local:%H%M}"
    if local.second or local.microsecond:
        at += f"{local:%S}"
    if local.microsecond:
        at += f".{local:%f}"
    return f"{base}-flush-{at}"
