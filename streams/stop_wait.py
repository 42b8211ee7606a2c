"""What a worker's stop waits for: the records its agents took, but not the parse batches in flight, and not
forever. A parse batch costs CPU (a large note parses in seconds, more on a loaded machine) and nothing of it is
acknowledged before it is forwarded, so the stop drops it: the agent's cancellation ends it, the parse processes
are killed, and Kafka delivers its raw records again after the restart (docs/guarantees.md)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Collection, Iterable
from typing import Any

from sinks.clock import Clock

log = logging.getLogger(__name__)

# The stores and command answers taken before the signal end within this: the rest of the 15 s a stopping worker
# has (streams.stopping.WORKER_STOP_SECONDS) is for the agents' cancellation, the checkpoint and the exit.
TAKEN_SECONDS = 8.0
ACK_WAIT_SECONDS = 1.0  # an ack wakes the wait at once; this long without one, it looks again
SHOWN = 5  # offsets named in the line about records left unacked


async def settle_taken(
    consumer: Any,
    dropped: str,
    clock: Clock,
    bound: float = TAKEN_SECONDS,
    left: Collection[tuple[str, int, int]] = (),
) -> None:
    """Until every record taken but those of the `dropped` topic and those `left` (topic, partition, offset: a
    command whose briefing the stop cut short) is acked, or `bound` s; then commit what was.

    Faust's own wait (`Consumer.wait_empty`, run when `stream_wait_empty` is set) waits for every record taken,
    with no bound; its steps are the same: a collection drops the records no stream holds any more (its set of
    unacked records is weak), a commit, a wait for the next ack."""
    deadline = clock.monotonic() + bound
    while waiting := _unacked(consumer, dropped, left):
        if clock.monotonic() >= deadline:
            log.warning(
                "the stop waited %.0fs for %d record(s) taken before it and went on without them (%s): "
                "unacknowledged, they are delivered again after the restart",
                bound,
                len(waiting),
                describe(waiting),
            )
            break
        gc.collect()
        await consumer.commit()
        await next_ack(consumer, ACK_WAIT_SECONDS)
        consumer._clean_unacked_messages()
    await consumer.commit_and_end_transactions()


async def next_ack(consumer: Any, timeout: float) -> None:
    """Until the consumer's next ack, or `timeout` s. Faust's own wait (`Consumer._wait_for_ack`) swallows a
    cancellation: the task cancelled there (a revocation's wait, the stop's) would have gone on waiting."""
    woken = consumer._waiting_for_ack = asyncio.get_running_loop().create_future()
    try:
        await asyncio.wait({woken}, timeout=timeout)
    finally:
        if consumer._waiting_for_ack is woken:
            consumer._waiting_for_ack = None


def _unacked(consumer: Any, dropped: str, left: Collection[tuple[str, int, int]]) -> list[Any]:
    return [
        m
        for m in list(consumer._unacked_messages)
        if not m.acked and m.tp.topic != dropped and (m.tp.topic, m.tp.partition, m.offset) not in left
    ]


def describe(messages: Iterable[Any]) -> str:
    """`topic[partition]@offset, …` of the first few records, by topic, partition and offset."""
    ordered = sorted((m.tp.topic, m.tp.partition, m.offset) for m in messages)
    shown = ", ".join(f"{topic}[{partition}]@{offset}" for topic, partition, offset in ordered[:SHOWN])
    return shown + (f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")
