"""The system clock answers in aware UTC and never goes back; the test clock moves only when driven."""

from __future__ import annotations

from datetime import UTC, timedelta

from sinks.clock import SYSTEM_CLOCK, Clock
from tests.clocks import START, ManualClock


async def test_the_system_clock_is_aware_utc_and_monotonic() -> None:
    clock: Clock = SYSTEM_CLOCK
    now = clock.now()
    assert now.tzinfo is UTC  # a naive time would shift windows by the machine's zone
    first = clock.monotonic()
    await clock.sleep(0.01)
    assert clock.monotonic() - first >= 0.009
    assert clock.now() >= now


async def test_the_manual_clock_moves_only_when_driven() -> None:
    clock: Clock = ManualClock()
    assert isinstance(clock, ManualClock)
    assert clock.now() == clock.now() == START
    await clock.sleep(90)
    assert clock.now() == START + timedelta(seconds=90) and clock.sleeps == [90]
    clock.set(START + timedelta(hours=1))
    assert clock.monotonic() == 1000.0 + 3600
