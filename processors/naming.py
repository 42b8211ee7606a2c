"""File names of emitted briefings."""

from __future__ import annotations

from datetime import datetime, tzinfo

from processors.models import Trigger


def briefing_basename(axis: str, end: datetime, trigger: Trigger, zone: tzinfo) -> str:
    """`2026-09-27-inference-e1prep`, or `…-e1prep-flush-2215` for a flush (local date/time of end)."""
    local = end.astimezone(zone)
    base = f"{local:%Y-%m-%d}-{axis}-e1prep"
    return f"{base}-flush-{local:%H%M}" if trigger == "flush" else base
