"""The producers' partitioner: every key lands where aiokafka's default (murmur2, as Java's) puts it."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner

from streams.kafka_io import key_partitioner

KEYS = [
    b"",
    b"a",
    b"inbox/jay/2026-09-26-2222-rattention-towards-the-minimal-sliding-9418.md",
    "paper_cards/2106-2506-11418-长上下文.md".encode(),
    *(f"inbox/tom/note-{i}.md".encode() for i in range(200)),
]


def test_a_key_lands_on_the_default_partitioners_partition_for_any_partition_count() -> None:
    default = DefaultPartitioner()
    for count in (1, 2, 3, 7, 12):
        partitions = list(range(count))
        for key in KEYS:
            assert key_partitioner(key, partitions, partitions) == default(key, partitions, partitions)


def test_one_partition_takes_every_key_and_keyless_record() -> None:
    assert {key_partitioner(key, [0], [0]) for key in KEYS} == {0}
    assert key_partitioner(None, [0], []) == 0
