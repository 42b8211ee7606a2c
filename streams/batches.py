"""Batches of an agent's stream that grow while a backlog waits: Faust's `take_events` with one rule added.

`Stream.take_events(max, within)` hands a batch over `within` seconds after the last one, whatever is waiting:
behind a backfill that was a few dozen records per batch, each paying a DuckDB transaction, a log line per
note and a commit. Here a batch that is not full when `within` passes waits another `within` while its
partitions hold records beyond it (Kafka's high water) weighing at least `BACKLOG_RECORDS` (a documents record weighs its
notes: `weighed_behind`), up to `LINGER_SECONDS`:
a backlog is stored in full batches, a trickle as soon as before.

The buffering is Faust's own (faust-streaming 0.15, `Stream.take_events`): a processor adds each event to the
buffer while the stream is drained in the background; unlike `take_events`, the caller acks a batch once its work
is done (`ack_all`, in offset order), and the next batch fills while one is handled
(up to its own `max_records`): a stage that waited for its batch to arrive after each one idled meanwhile
(docs/performance.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, cast

from faust.streams import Stream
from faust.types import TP, ChannelT, EventT
from faust.types.tuples import ConsumerMessage
from mode.utils.aiter import aiter

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


def weighed_behind(records: int, events: Sequence[EventT[Any]], weight: Weight) -> float:
    """The weight of `records` waiting behind a batch, taking each at the batch's mean weight."""
    return records * sum(map(weight, events)) / max(len(events), 1)


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

    async def add(value: Any) -> Any:
        nonlocal started, weighed
        try:
            event = stream.current_event
            if event is None:
                raise RuntimeError("the batch buffer found no current event")
            if not events:
                started = clock.monotonic()
            events.append(event)
            weighed += weight(event)
            if weighed >= max_records:
                full.set()
                consumed.clear()  # not one event more than max_records: wait until this batch is taken
                await stream.wait(consumed)  # type: ignore[arg-type]  # mode types it as its own Event
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("adding to the batch buffer failed")
            await stream.crash(exc)
        return value

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
    stream.add_processor(add)
    stream._enable_passive(cast(ChannelT[Any], aiter(stream.channel)))
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
        stream._processors.remove(add)
