"""Command checks: an end out of reach, off the calendar or without an offset, or an unknown axis, is refused with
its reason code; anything accepted can be briefed (its window and file name computed) without raising."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.briefing_names import briefing_basename
from processors.commands import COMMAND_REFUSALS, CommandLimits, check_command, check_end
from processors.models import ControlCommand
from processors.window import window_bounds

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 3, 16, 0, tzinfo=UTC)
LIMITS = CommandLimits(
    axes=("inference", "risk"),
    window=timedelta(hours=24),
    zone=SH,
    max_past=timedelta(days=366),
    max_future=timedelta(hours=24),
)
# Wide enough that only the calendar can refuse: what a worker configured for a century of archive would do.
WIDE = CommandLimits(
    axes=LIMITS.axes,
    window=LIMITS.window,
    zone=SH,
    max_past=timedelta(days=36_600),
    max_future=timedelta(days=366),
)


def command(end: datetime, axis: str = "inference") -> ControlCommand:
    return ControlCommand(axis=axis, trigger="flush", end=end, requested_at=NOW, request_id="r")


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), "end_too_far_ahead"),
        (datetime(1, 1, 1, tzinfo=UTC), "end_too_old"),
        (datetime.fromisoformat("2026-09-27T22:20:00"), "naive_end"),
        (NOW - timedelta(days=367), "end_too_old"),
        (NOW + timedelta(hours=25), "end_too_far_ahead"),
    ],
)
def test_the_poison_ends_are_refused_with_their_reason(end: datetime, reason: str) -> None:
    refused = check_command(command(end), LIMITS, NOW)
    assert refused is not None and refused.reason == reason
    assert end.isoformat() in refused.detail


@pytest.mark.parametrize(
    "end",
    [
        datetime(1, 1, 1, tzinfo=UTC),  # its window would start before year 1
        datetime(1, 1, 1, 12, tzinfo=timezone(timedelta(hours=14))),  # 0000-12-31 in UTC
        datetime(9999, 12, 31, 20, tzinfo=UTC),  # 10000-01-01 in Shanghai, the briefing's zone
    ],
)
def test_a_window_off_the_calendar_is_refused_however_wide_the_reach(end: datetime) -> None:
    unbounded = replace(LIMITS, max_past=timedelta.max, max_future=timedelta.max)
    refused = check_command(command(end), unbounded, NOW)
    assert refused is not None and refused.reason == "window_out_of_range"


def test_an_unknown_axis_is_refused_and_the_configured_ones_named() -> None:
    refused = check_command(command(NOW, axis="../etc"), LIMITS, NOW)
    assert refused is not None and refused.reason == "unknown_axis"
    assert "inference, risk" in refused.detail


@pytest.mark.parametrize(
    "end",
    [NOW, NOW - timedelta(days=366), NOW + timedelta(hours=24), datetime(2026, 9, 27, 22, 20, tzinfo=SH)],
)
def test_ends_within_reach_are_accepted(end: datetime) -> None:
    assert check_command(command(end), LIMITS, NOW) is None


def test_every_reason_is_a_code_a_metric_can_carry() -> None:
    assert set(COMMAND_REFUSALS) == {
        "unknown_axis",
        "naive_end",
        "end_too_old",
        "end_too_far_ahead",
        "window_out_of_range",
    }
    assert all(r.isidentifier() for r in COMMAND_REFUSALS)


@given(
    end=st.datetimes(timezones=st.sampled_from([UTC, SH, timezone(timedelta(hours=-12))])),
    now=st.datetimes(timezones=st.just(UTC)).filter(lambda t: t.year not in (1, 9999)),
    limits=st.sampled_from([LIMITS, WIDE]),
)
def test_any_end_is_refused_or_briefable_never_an_exception(
    end: datetime, now: datetime, limits: CommandLimits
) -> None:
    if check_end(end, limits, now) is None:
        bounds = window_bounds(end, limits.window)  # what the worker computes for a briefing
        bounds.start.astimezone(limits.zone)
        briefing_basename("inference", end, "flush", limits.zone)
