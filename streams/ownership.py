"""Which axes this worker owns: the documents partitions Kafka assigned it, and whether their state is ready.

`predigest.documents` and `predigest.control` are keyed by axis and have the same partition count, so an
axis's documents and commands share a partition number. Faust's assignor gives every partition number
of co-partitioned topics (same count, same subscribers) to one worker, so that worker owns the axis.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from aiokafka.partitioner import murmur2

log = logging.getLogger(__name__)


def key_partition(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (murmur2, as the Java client and aiokafka)."""
    return int(murmur2(key.encode()) & 0x7FFFFFFF) % partitions


class Ownership:
    """The owned documents partitions; an owned partition is ready once its state caught up with Kafka."""

    def __init__(self, axes: Sequence[str], partitions: int) -> None:
        self.partitions = partitions
        self._axes = list(axes)
        self._ready: dict[int, asyncio.Event] = {}  # the owned partitions, each with its catch-up
        self.control_partitions: set[int] = set()  # what Faust assigned of the control topic, for status
        self.assignments = 0  # how many assignments came (0: the worker has not joined its group yet)

    def partition_of(self, axis: str) -> int:
        return key_partition(axis, self.partitions)

    def axis_map(self) -> dict[str, int]:
        return {axis: self.partition_of(axis) for axis in self._axes}

    @property
    def owned_partitions(self) -> set[int]:
        return set(self._ready)

    def owns(self, axis: str) -> bool:
        return self.partition_of(axis) in self._ready

    def owned_axes(self) -> list[str]:
        return [a for a in self._axes if self.owns(a)]

    def catching_up(self) -> set[int]:
        """Owned partitions whose state is still being replayed."""
        return {p for p in self._ready if not self.is_ready(p)}

    def is_ready(self, partition: int) -> bool:
        event = self._ready.get(partition)
        return event is not None and event.is_set()

    def assign(self, partitions: Iterable[int]) -> None:
        """A new assignment: every owned partition waits for its catch-up before records are applied."""
        self.revoke(self._ready)
        self._ready = {p: asyncio.Event() for p in partitions}
        self.assignments += 1

    def revoke(self, partitions: Iterable[int]) -> None:
        for p in set(partitions):
            event = self._ready.pop(p, None)
            if event is not None:
                event.set()  # wake whoever waits: they find the partition gone and skip the record

    def mark_ready(self, partition: int) -> None:
        event = self._ready.get(partition)
        if event is not None:
            event.set()

    async def wait_ready(self, partition: int) -> bool:
        """Wait until the partition's state is caught up; False if the partition is not (or no longer) ours."""
        while True:
            # Re-read after every wake-up: a revocation followed by a new assignment brings a new catch-up,
            # and applying a record before it would make the replay skip the records below it.
            event = self._ready.get(partition)
            if event is None:
                return False
            if event.is_set():
                return True
            await event.wait()

    async def wait_caught_up(self) -> None:
        """Until no owned partition is catching up (each one caught up, or revoked)."""
        while pending := self.catching_up():
            await self.wait_ready(min(pending))

    def refusal(self, axis: str, partition: int) -> str | None:
        """Why a command for `axis` read from `partition` must not be answered here; None if it may."""
        if self.partition_of(axis) != partition:
            return "misrouted"  # produced with another partitioner: the owner of the axis never sees it
        if partition not in self._ready:
            return "not_owned"
        return None
