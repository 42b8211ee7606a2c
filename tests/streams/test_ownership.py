"""Axis ownership without Kafka: the partition of an axis, refusals, waiting for the catch-up."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.partitioner import DefaultPartitioner

from streams.ownership import Ownership, key_partition

AXES = ["inference", "llm-infra", "risk", "llm-application"]


@pytest.mark.parametrize("partitions", [1, 2, 3, 4, 6, 8, 12])
def test_an_axis_lands_where_kafkas_default_partitioner_puts_its_key(partitions: int) -> None:
    # The CLI's producer (aiokafka) and Faust's both use it for control and documents records.
    everything = list(range(partitions))
    for key in [*AXES, "_rejected", "其他", "a" * 300]:
        assert key_partition(key, partitions) == DefaultPartitioner()(key.encode(), everything, everything)


def test_commands_are_refused_for_axes_of_other_partitions() -> None:
    o = Ownership(AXES, 4)
    o.assign({0, 1})
    assert o.owned_axes() == ["inference", "llm-infra"]
    assert o.refusal("inference", 0) is None
    assert o.refusal("risk", 2) == "not_owned"
    assert o.refusal("inference", 1) == "misrouted"


async def test_records_wait_for_the_catch_up_and_a_revocation_releases_them() -> None:
    o = Ownership(AXES, 4)
    o.assign({0, 2})
    waiting = asyncio.create_task(o.wait_ready(0))
    revoked = asyncio.create_task(o.wait_ready(2))
    await asyncio.sleep(0.01)
    assert not waiting.done() and not o.is_ready(0)
    o.mark_ready(0)
    assert await waiting is True and o.is_ready(0)
    o.revoke({2})
    assert await revoked is False  # the partition moved on: its record is not applied here
    assert await o.wait_ready(3) is False  # never owned
    o.assign({3})  # a new assignment starts over: nothing is ready before its catch-up
    assert not o.is_ready(0) and not o.is_ready(3)


async def test_a_waiter_woken_by_a_revocation_waits_for_the_next_catch_up() -> None:
    # Revoked and assigned again before the waiter runs: it must wait for the new catch-up, not apply.
    o = Ownership(AXES, 4)
    o.assign({0})
    waiting = asyncio.create_task(o.wait_ready(0))
    await asyncio.sleep(0.01)
    o.revoke({0})
    o.assign({0})
    await asyncio.sleep(0.01)
    assert not waiting.done()
    o.mark_ready(0)
    assert await waiting is True
