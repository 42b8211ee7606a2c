"""The v6 writer (a parse batch's v4 records of one partition in one record, compressed together, bodies and all)
as predigest wrote it before v7."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import cramjam
import pydantic_core

from processors.wire_frames import LEVEL, MAGIC_V6
from tests.processors.wire_v5 import pack_records


def pack_v6(
    records: Sequence[tuple[bytes, bytes]], partitions: Mapping[str, int], budget: int
) -> list[tuple[bytes, bytes]]:
    """v6 records of v4 ones: grouped as v5 records are, their notes one zstd frame."""
    out = []
    for key, v5 in pack_records(records, partitions, budget):
        _, lengths, notes = v5.split(b"\n", 2)
        sizes = pydantic_core.from_json(lengths)
        assert sum(sizes) == len(notes)
        frame = bytes(cramjam.zstd.compress(notes, level=LEVEL))
        out.append((key, b"".join([MAGIC_V6, b"\n", lengths, b"\n", frame])))
    return out
