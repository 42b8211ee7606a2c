"""The consumer hands each fetched record to its agents' buffers without four asyncio tasks a record.

Faust's fetcher loop (faust-streaming 0.15, `Consumer._drain_messages`) passes every record on with
`wait_first(callback(message), suspend_flow.wait())`: a task each for the callback, the flow's event and the
consumer's stopped and crashed events, an `asyncio.wait` and three cancellations, ~30 µs a record, though the
callback nearly always finishes at its first step (its topic's buffer has room). Here that first step runs
inline; a callback that has to wait (a full buffer, flow control during a rebalance) is handed, as it stands,
to Faust's own `wait_first`, which abandons it when the flow is suspended, as before (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from types import CoroutineType
from typing import Any, cast

from faust.transport.consumer import Consumer
from mode import Service
from mode.services import WaitArgT, WaitResults
from mode.utils.times import Seconds

_faust_wait_first = Consumer.wait_first


class _Resumed:
    """The rest of a coroutine whose first step already ran: awaited, it goes on as if it never had been split."""

    __slots__ = ("_coro", "_waits_on")

    def __init__(self, coro: Coroutine[Any, Any, Any], waits_on: Any) -> None:
        self._coro = coro
        self._waits_on = waits_on  # what its first step yielded to the event loop (a future, or None)

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, value = self._coro, self._waits_on
        try:
            while True:
                try:
                    sent = yield value
                except BaseException as exc:  # a cancellation (or a close) goes on into the coroutine
                    value = coro.throw(exc)
                else:
                    value = coro.send(sent)
        except StopIteration as done:
            return done.value


async def wait_first(self: Service, *coros: WaitArgT, timeout: Seconds | None = None) -> WaitResults:
    """Faust's `wait_first`, with the fetcher's per-record call (two coroutines, no timeout) run inline when its
    callback does not have to wait."""
    # Type checks, not inspect.iscoroutine over a generator: 0.6 -> 0.2 µs a record (coroutines are final).
    if (
        timeout is not None
        or len(coros) != 2
        or type(coros[0]) is not CoroutineType
        or type(coros[1]) is not CoroutineType
    ):
        if timeout is None:
            return await _faust_wait_first(self, *coros)
        return await _faust_wait_first(self, *coros, timeout=timeout)
    callback, suspended = cast(tuple[Coroutine[Any, Any, Any], Coroutine[Any, Any, Any]], coros)
    try:
        waits_on = callback.send(None)
    except StopIteration as done:
        suspended.close()  # never started: closed, so no "never awaited" warning
        return WaitResults([callback], [done.value], False)
    except BaseException:
        suspended.close()
        raise
    return await _faust_wait_first(self, _Resumed(callback, waits_on), suspended)


def hand_over_inline() -> None:
    """Make every Faust consumer hand records over this way from now on (idempotent)."""
    Consumer.wait_first = wait_first  # type: ignore[method-assign]
