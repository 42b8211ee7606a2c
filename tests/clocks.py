"""A clock tests drive: it moves only when the test advances it or the code under test sleeps on it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

START = datetime(2026, 9, 27, 14, 30, tzinfo=UTC)  # 22:30 in Asia/Shanghai, after the default close and grace


class ManualClock:
    """`sinks.clock.Clock` for tests; with `tick`, every reading of `now()` moves it on by that much."""

    def __init__(
        self, now: datetime = START, *, tick: timedelta = timedelta(0), monotonic: float = 1000.0
    ) -> None:
        assert now.tzinfo is not None, "the product's clock is timezone-aware"
        self._now = now
        self._monotonic = monotonic
        self._tick = tick
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        self._now += self._tick
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)  # other tasks run, as they would while a real sleep waits

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds

    def set(self, now: datetime) -> None:
        """Jump the wall time (the monotonic count follows, as long as it does not go back)."""
        self._monotonic += max(0.0, (now - self._now).total_seconds())
        self._now = now
