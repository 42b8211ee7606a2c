"""The one clock the product reads time from (wall time in aware UTC, a monotonic count, sleeping); tests drive theirs."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Where time comes from: injected into everything that reads it, so that tests can drive it."""

    def now(self) -> datetime:
        """The wall time, timezone-aware UTC (window ends, event times, `generated_at`)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for durations and intervals only."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` on this clock."""
        ...


class SystemClock:
    """The machine's clocks: the only place the product reads them."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


def epoch_seconds() -> float:
    """The system clock's wall time in seconds since the epoch (what file mtimes are compared with)."""
    return SYSTEM_CLOCK.now().timestamp()
