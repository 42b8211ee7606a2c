"""Batches of an agent's stream that grow while a backlog waits: Faust's `take_events` with one rule added.

`Stream.take_events(max, within)` hands a batch over `within` seconds after the last one, whatever is waiting:
behind a backfill that was a few dozen records per batch, each paying a DuckDB transaction, a log line per
note and a commit. Here a batch that is not full when `within` passes waits another `within` while its
partitions hold records beyond it (Kafka's high water) weighing at least `BACKLOG_RECORDS` (a documents record weighs its
notes: `weighed_behind`), up to `LINGER_SECONDS`:
a backlog is stored in full batches, a trickle as soon as before.

The stream's buffer is drained in the background, as by `Stream.take_events` (faust-streaming 0.15), but all the
events waiting at a time, with the bookkeeping of Faust's iteration (`_Drain`: one event-loop turn a drain, not
a record); unlike `take_events`, the caller acks a batch once its work is done (`ack_all`, in offset order), and
the next batch fills while one is handled (up to its own `max_records`): a stage that waited for its batch to
arrive after each one idled meanwhile (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from faust.streams import Stream
from faust.types import TP, ChannelT, EventT
from faust.types.tuples import ConsumerMessage

from sinks.clock import Clock

try:  # Faust's compiled stream iterator: its `after` is the ack its own iteration runs for each event
    from faust._cython.streams import StreamIterator as _CompiledIterator
except ImportError:  # Faust built without its extensions: Stream.ack
    _CompiledIterator = None

log = logging.getLogger(__name__)

# Counted in weight (a documents record weighs its notes, ~17 behind a backfill): a trickle of 20 notes/s is a
# few behind at most; a backfill is thousands.
BACKLOG_RECORDS = 64
LINGER_SECONDS = 0.5  # the longest a batch waits to grow; only ever with a backlog behind it


def records_behind(stream: Stream[Any], events: Sequence[EventT[Any]]) -> int:
    """How many records the batch's partitions hold beyond it, from the consumer's last fetch (0 if unknown)."""
    last: dict[TP, int] = {}
    for event in events:
        last[event.message.tp] = max(last.get(event.message.tp, -1), event.message.offset)
    try:
        consumer = stream.app.consumer
        return sum(max(0, consumer.highwater(tp) - offset - 1) for tp, offset in last.items())
    except Exception:  # no consumer (an in-process test) or no fetch yet: nothing is known to wait
        return 0


Behind = Callable[[Stream[Any], Sequence[EventT[Any]]], int]
Weight = Callable[[EventT[Any]], int]


def one(event: EventT[Any]) -> int:
    return 1


def nothing_behind(stream: Stream[Any], events: Sequence[EventT[Any]]) -> int:
    """No backlog taken into account: a batch is handed over after `within`, as Faust's `take_events` does."""
    return 0


async def ack_all(stream: Stream[Any], events: Sequence[EventT[Any]]) -> None:
    """Ack a batch's events, in offset order.

    Acks must never leave a gap: Faust's commit does not reliably stop at one (its check is off by one, and
    skipped before a partition's first commit), so a batch is acked only after every batch before it.
    A consumed record is acked as Faust's compiled stream acks the events it yields (`after`: the same
    bookkeeping, sensors and lock as `Stream.ack`, without its four Python calls a record)."""
    after = None
    for event in events:
        if _CompiledIterator is not None and type(event.message) is ConsumerMessage:
            if after is None:
                after = _CompiledIterator(stream).after
            after(event, True, None)
        else:  # a message a test made, or no extension: Faust's own path
            await stream.ack(event)


async def each_then_acked(stream: Stream[Any]) -> AsyncIterator[EventT[Any]]:
    """The stream's events one at a time, each acked once the caller's work on it returned (at the next turn).

    Faust's own iteration acks an event as its generator leaves it, also when a stop cancelled the work and closes
    the generator, and the stop then commits it: an event left so stays unacked here, and Kafka delivers it again."""
    stream.enable_acks = False
    async for event in stream.events():
        yield event
        await ack_all(stream, [event])


def weighed_behind(records: int, events: Sequence[EventT[Any]], weight: Weight) -> float:
    """The weight of `records` waiting behind a batch, taking each at the batch's mean weight."""
    return records * sum(map(weight, events)) / max(len(events), 1)


# Takes an event into the batch; what it returns, if anything, is awaited before the next (a full batch).
Add = Callable[[EventT[Any]], Awaitable[object] | None]


class _Drain:
    """An agent stream's buffered events handed to `add`, all that wait at a time, as Faust's stream reads them.

    Faust's stream iteration gives the event loop a turn before each event (its compiled `next`): a whole loop
    pass, with its poll, a record (docs/performance.md). Here the loop turns once for all the events waiting.
    Each is checked, tracked and sensed as Faust's iteration does (`_prepare_event`, then `after` without an
    ack): one of an earlier generation, or read while the flow is suspended (a rebalance), is dropped unread."""

    def __init__(self, stream: Stream[Any], add: Add) -> None:
        channel = stream.channel
        if not isinstance(channel, ChannelT):
            raise TypeError("the batch buffer reads an agent's channel")
        self._stream, self._add, self._queue = stream, add, channel.queue
        self._app = stream.app
        self._acking = stream.app.topics._acking_topics  # type: ignore[attr-defined]
        self._unacked = stream.app.consumer._unacked_messages  # type: ignore[attr-defined]

    async def run(self) -> None:
        stream, queue = self._stream, self._queue
        # Started as Faust's iteration starts it; stopped by its agent, not here: a drain ends as its batches end,
        # inside one of the stream's own futures, which its stop cancels and then waits for.
        await stream.maybe_start()
        stream._finalized = True  # as Faust's iteration marks it: nothing chained after it started
        try:
            while not stream.should_stop:
                if queue.empty():  # nothing buffered: wait for the next event (an error thrown in is raised)
                    await self._take(await queue.get())
                while not queue.empty() and not stream.should_stop:
                    await self._take(queue.get_nowait())
                await asyncio.sleep(0)  # the fetcher's turn, once a drain
        except StopAsyncIteration:  # the agent's actor stopping throws it into the channel: the read ends
            return
        except Exception as exc:  # a cancellation (its batches ended, or the stream stopped) passes
            log.exception("adding to the batch buffer failed")
            await stream.crash(exc)

    async def _take(self, event: Any) -> None:
        stream, app = self._stream, self._app
        if not isinstance(event, EventT):
            raise TypeError("the batch buffer found no event")
        message = event.message
        if not app.flow_control.is_active() or message.generation_id != app.consumer_generation_id:
            return  # Faust's iteration skips it too: its partition was revoked (or is paused) since it was read
        tp, offset = message.tp, message.offset
        if message.topic in self._acking and not message.tracked:
            message.tracked = True
            self._unacked.add(message)
            stream._on_message_in(tp, offset, message)
        state = stream._on_stream_event_in(tp, offset, stream, event)
        stream.current_event = event
        value = event.value
        for processor in stream._processors:  # the agent's own (the window agent's count of records read)
            value = processor(value)
            if inspect.isawaitable(value):
                value = await value
        stream.events_total += 1
        wait = self._add(event)
        if wait is not None:
            await wait
        stream.current_event = None
        stream._on_stream_event_out(tp, offset, stream, event, state)


async def take_batches(
    stream: Stream[Any],
    max_records: int,
    within: float,
    clock: Clock,
    behind: Behind = records_behind,
    weight: Weight = one,
) -> AsyncIterator[Sequence[EventT[Any]]]:
    """Batches of up to `max_records` events, or of events weighing that much; the caller acks each (`ack_all`)
    once its work is done: each agent's batches run as tasks beside the next batch's first steps.

    `behind` says how many records wait beyond a batch (`records_behind`; tests give their own backlog).
    """
    events: list[EventT[Any]] = []  # the next batch, filling while the one before is handled
    weighed = 0
    full, consumed = asyncio.Event(), asyncio.Event()
    started = 0.0  # when the batch's first event came (monotonic)

    def add(event: EventT[Any]) -> Awaitable[object] | None:
        nonlocal started, weighed
        if not events:
            started = clock.monotonic()
        events.append(event)
        weighed += weight(event)
        if weighed < max_records:
            return None
        full.set()
        consumed.clear()  # not one event more than max_records: wait until this batch is taken
        return stream.wait(consumed)  # type: ignore[arg-type]  # mode types it as its own Event

    def grows() -> bool:
        """Whether the batch should wait for more: not full, young enough, and a backlog behind it."""
        return (
            not full.is_set()
            and clock.monotonic() - started < LINGER_SECONDS
            and behind(stream, events) * weighed >= BACKLOG_RECORDS * len(events)  # weighed_behind
        )

    # Acked by the agents (`ack_all`) once the work is done: the parse agent's after its sends, the window's
    # after its store; Faust's own ack as a batch is yielded would commit past unfinished work.
    enabled = stream.enable_acks
    stream.enable_acks = False
    drainer = stream.add_future(_Drain(stream, add).run())
    try:
        while not stream.should_stop:
            await stream.wait_for_stopped(full, timeout=within)  # type: ignore[arg-type]
            if not events or grows():
                continue
            batch = list(events)
            events.clear()
            weighed = 0
            full.clear()
            consumed.set()  # the next batch fills from here on, while this one is handled
            yield batch
    finally:
        stream.enable_acks = enabled
        drainer.cancel()
