"""Briefing output isolated per axis: an axis whose files cannot be written is retried with back-off and reported,
while the worker goes on ingesting and the other axes go on emitting.

The outbox is the emissions table: a briefing is recorded before anything is written (`Pipeline.brief`), and it is
undelivered until the briefings topic acknowledged it. When its files cannot be written (a full disk, a folder that
cannot be written, a file where the axis's folder should be) the command is acknowledged anyway and the emission
stays undelivered; this module writes it and sends it once the folder is fixed: at the axis's next attempt, or after
the worker's next start, once the axis is owned here and its state caught up (which restores what the briefings topic
already holds, so nothing is sent twice). One lock orders the control agent's answer and these retries.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from processors.models import Trigger
from sinks.clock import Clock
from sinks.metrics import Metrics
from streams.emission import Emission
from streams.heap import briefing_heap
from streams.ownership import Ownership
from streams.pipeline import Pipeline
from streams.settings import Settings

log = logging.getLogger(__name__)

Deliver = Callable[[Emission], Awaitable[None]]

# Why an axis's briefing could not be written: the `reason` label of predigest_briefing_failures_total.
_REASONS = {
    errno.ENOSPC: "no_space",
    errno.EDQUOT: "no_space",
    errno.EACCES: "permission",
    errno.EPERM: "permission",
    errno.EROFS: "read_only",
    errno.ENOTDIR: "not_a_folder",
    errno.EEXIST: "not_a_folder",  # a file where the axis's folder should be
    errno.EISDIR: "not_a_folder",
}


def failure_reason(exc: BaseException) -> str:
    """The code of a failed write (or send); `error` for anything that is not the disk's doing."""
    if isinstance(exc, OSError):
        return _REASONS.get(exc.errno or 0, "os_error")
    return "error"


@dataclass
class AxisFailure:
    """An axis whose briefings cannot be written now: why, since when, and when it is tried again."""

    reason: str
    error: str
    since: datetime
    attempts: int = 0
    next_attempt: float = 0.0  # on the clock's monotonic count
    pending: set[tuple[datetime, str]] = field(default_factory=set)


class BriefingOutbox:
    """Writes each emission's files, and retries an axis's unwritten ones with back-off until they are written."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        clock: Clock,
        pipeline: Callable[[], Pipeline],
        ownership: Ownership,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self._pipeline = pipeline
        self._ownership = ownership
        self._failing: dict[str, AxisFailure] = {}
        self._swept: set[str] = set()  # axes whose undelivered emissions were looked for since the start
        self.lock = asyncio.Lock()  # the control agent answers a command under it; retries take it too

    async def write(self, emission: Emission) -> bool:
        """Write the emission's files; on failure record it for its axis (retried later) and return False."""
        axis = emission.axis
        key = (emission.window_end, emission.trigger)
        failure = self._failing.get(axis)
        try:
            # Its texts unpacked a few MB at a time: freed blocks leave as a briefing's do (streams.heap).
            with briefing_heap():
                await asyncio.to_thread(self._pipeline().write_files, emission)
        except Exception as exc:  # the disk's problem, or a bug in rendering: this axis's, never the worker's
            self._failed(axis, key, exc)
            return False
        if failure is not None:
            failure.pending.discard(key)
        return True

    def _failed(
        self, axis: str, key: tuple[datetime, str], exc: BaseException, sending: bool = False
    ) -> None:
        s = self._settings
        reason = "send" if sending else failure_reason(exc)
        failure = self._failing.setdefault(axis, AxisFailure(reason, str(exc), self._clock.now()))
        failure.reason, failure.error = reason, str(exc)
        failure.attempts += 1
        failure.pending.add(key)
        doublings = min(failure.attempts - 1, 32)  # days of failing must not overflow the float
        backoff = min(s.briefing_retry_max_seconds, s.briefing_retry_seconds * 2**doublings)
        failure.next_attempt = self._clock.monotonic() + backoff
        self._metrics.briefing_failures.labels(axis=axis, reason=reason).inc()
        self._metrics.briefing_failing.labels(axis=axis).set(1)
        log.error(
            "the briefing of %s ending %s (%s) cannot be %s (%s: %s); %d pending for this axis, next try "
            "in %.0f s; the worker and the other axes go on",
            axis,
            key[0].isoformat(),
            key[1],
            "sent" if sending else "written",
            reason,
            exc,
            len(failure.pending),
            backoff,
            extra={"axis": axis},
        )

    def _recovered(self, axis: str) -> None:
        failure = self._failing.pop(axis, None)
        if failure is not None:
            self._metrics.briefing_failing.labels(axis=axis).set(0)
            log.info(
                "the briefings of %s are written again (after %d failed attempt(s))", axis, failure.attempts
            )

    async def tick(self, deliver: Deliver) -> None:
        """Retry what is due: the failing axes' emissions when their back-off ends, and once per axis after the
        start, when its state has caught up (so what the briefings topic already holds is known), all of its own."""
        now = self._clock.monotonic()
        due = {a for a, f in self._failing.items() if f.next_attempt <= now}
        sweep = {
            a
            for a in self._ownership.owned_axes()
            if a not in self._swept and self._ownership.is_ready(self._ownership.partition_of(a))
        }
        if not due and not sweep:
            return
        async with self.lock:
            todo = [e for e in self._pipeline().state.undelivered_emissions() if e[0] in due | sweep]
            self._swept |= sweep
            stuck: set[str] = set()
            for axis, end, trigger in todo:
                if axis not in stuck and not await self._retry(axis, end, trigger, deliver):
                    stuck.add(axis)  # the rest of its emissions wait for its next attempt
            for axis in due - stuck:
                self._recovered(axis)

    async def _retry(self, axis: str, end: datetime, trigger: Trigger, deliver: Deliver) -> bool:
        emission = self._pipeline().recorded(axis, end, trigger)
        if emission is None or emission.delivered:
            return True
        if not await self.write(emission):
            return False
        try:
            await deliver(emission)
        except Exception as exc:  # Kafka: tried again with the axis's next attempt
            self._failed(axis, (end, emission.trigger), exc, sending=True)
            return False
        log.info(
            "wrote and sent the briefing of %s ending %s (%s) that was waiting",
            axis,
            end.isoformat(),
            trigger,
        )
        return True

    def settle(self, axis: str) -> None:
        """The control agent wrote an axis's briefing: the folder works again, so what waits is tried at once."""
        failure = self._failing.get(axis)
        if failure is not None and not failure.pending:
            self._recovered(axis)
        elif failure is not None:
            failure.next_attempt = 0.0

    def report(self) -> dict[str, Any]:
        """Per failing axis, what `GET /status` shows."""
        now = self._clock.monotonic()
        return {
            axis: {
                "reason": f.reason,
                "error": f.error,
                "since": f.since.isoformat(),
                "attempts": f.attempts,
                "pending": len(f.pending),
                "next_attempt_in_seconds": max(0.0, round(f.next_attempt - now, 1)),
            }
            for axis, f in sorted(self._failing.items())
        }
