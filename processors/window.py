"""Window arithmetic: bounds, membership, scheduled closes and catch-up after missed runs."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from processors.models import WindowBounds

MAX_CATCH_UP = 7


def window_bounds(end: datetime, length: timedelta) -> WindowBounds:
    """The half-open window `[end - length, end)`."""
    return WindowBounds(start=end - length, end=end)


def in_window(t: datetime, w: WindowBounds) -> bool:
    """True when `start <= t < end`."""
    return w.start <= t < w.end


def scheduled_close(day: date, close_at: time, zone: ZoneInfo) -> datetime:
    """The window end scheduled on `day` at `close_at` local time in `zone`."""
    return datetime.combine(day, close_at.replace(tzinfo=None), tzinfo=zone)


def due_closes(
    last_emitted_end: datetime | None, now: datetime, close_at: time, zone: ZoneInfo, grace: timedelta
) -> list[datetime]:
    """Window ends due (end + grace <= now) and later than `last_emitted_end`, oldest first, at most 7."""
    today = now.astimezone(zone).date()
    due: list[datetime] = []
    for back in range(MAX_CATCH_UP + 1):
        end = scheduled_close(today - timedelta(days=back), close_at, zone)
        if end + grace > now:
            continue
        if last_emitted_end is not None and end <= last_emitted_end:
            break
        due.append(end)
        if last_emitted_end is None or len(due) >= MAX_CATCH_UP:
            break
    return sorted(due)


def next_close_fire(now: datetime, close_at: time, zone: ZoneInfo, grace: timedelta) -> datetime:
    """The next instant (scheduled end + grace) strictly after `now` at which a close is sent."""
    today = now.astimezone(zone).date()
    for offset in range(-1, 3):
        fire = scheduled_close(today + timedelta(days=offset), close_at, zone) + grace
        if fire > now:
            return fire
    raise AssertionError("unreachable: a close fires every day")  # pragma: no cover
