"""Agent steps that must finish before their record is acknowledged: retry, else stop without acking.

Faust acknowledges a record when the agent's loop moves on, even when the body raised (the stream's
`finally`, faust-streaming #315, robinhood/faust #604), and then commits past it. A step that keeps
failing therefore ends the process on the spot: the offset is not committed and Kafka redelivers the
record to the restarted worker; every write downstream is idempotent, so the replay is harmless.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

EXIT_CODE = 75  # EX_TEMPFAIL: the supervisor (compose `restart:`) starts the worker again
ATTEMPTS = 5
BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


def halt(code: int = EXIT_CODE) -> NoReturn:
    """End the process now: no `finally`, so no acknowledgement and no offset commit."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(code)


async def must_finish(
    step: Callable[[], Awaitable[T]],
    what: str,
    *,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF_SECONDS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    stop: Callable[[int], NoReturn] = halt,
) -> T:
    """Run `step` until it succeeds, `attempts` times with doubling back-off; then stop the process."""
    delay = backoff
    for attempt in range(1, attempts + 1):
        try:
            return await step()
        except Exception as exc:
            if attempt == attempts:
                log.critical(
                    "%s failed %d times; stopping the worker without acknowledging the record, "
                    "which Kafka will deliver again after the restart",
                    what,
                    attempts,
                    exc_info=True,
                )
                stop(EXIT_CODE)
            log.warning(
                "%s failed (attempt %d of %d): %s; retrying in %.1fs", what, attempt, attempts, exc, delay
            )
            await sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_SECONDS)
    raise AssertionError("unreachable: the last attempt returns or stops")  # pragma: no cover
