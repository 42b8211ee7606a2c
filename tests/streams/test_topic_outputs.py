"""The worker's sends: a briefing's parts each freed once the producer holds its own copy."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Iterator
from types import SimpleNamespace
from typing import Any, cast

from processors.briefing_parts import Part
from streams.topics import TopicOutputs


class _Producer:
    """Copies each value as aiokafka's batch builder does; notes, at each acknowledgement, whether the part sent
    is still alive."""

    def __init__(self, parts: list[weakref.ref[Part]]) -> None:
        self.parts = parts
        self.alive_at_ack: list[bool] = []

    async def send(self, *args: object) -> Awaitable[None]:
        sent = self.parts[-1]

        async def ack() -> None:
            self.alive_at_ack.append(sent() is not None)

        return ack()


def _tracked(part: Part, refs: list[weakref.ref[Part]]) -> Part:
    refs.append(weakref.ref(part))
    return part


async def test_a_briefing_part_is_freed_before_its_acknowledgement_is_awaited() -> None:
    # A part is ~24 MB; the producer's copy, its compressed copy and the zstd output come after it: the part
    # itself must not stay through them (the worker's peak with a 100k briefing).
    refs: list[weakref.ref[Part]] = []
    producer = _Producer(refs)

    async def started() -> _Producer:
        return producer

    app = SimpleNamespace(maybe_start_producer=started)
    topics = SimpleNamespace(briefings=SimpleNamespace(get_topic_name=lambda: "predigest.briefings"))
    outputs = TopicOutputs(cast(Any, app), cast(Any, topics))

    def parts() -> Iterator[Part]:
        for i in range(3):
            yield _tracked(Part(bytes([i]) * 1024, [("predigest-part", f"{i + 1}/3".encode())]), refs)

    await outputs.briefing("inference", parts())
    assert producer.alive_at_ack == [False, False, False]
