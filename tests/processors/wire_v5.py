"""The v5 writer (a parse batch's v4 records of one partition in one record, uncompressed) as predigest wrote it
before v6."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pydantic_core

from processors.wire import MAGIC_V5


def pack_records(
    records: Sequence[tuple[bytes, bytes]], partitions: Mapping[str, int], budget: int
) -> list[tuple[bytes, bytes]]:
    """v5 records of v4 ones: in order, the ones of one documents partition together up to `budget` bytes (a
    larger one alone), keyed by the first one's key."""
    groups: dict[int, tuple[bytes, list[bytes]]] = {}
    sizes: dict[int, int] = {}
    out: list[tuple[bytes, bytes]] = []
    for key, value in records:
        p = partitions.get(key.decode(), 0)
        group = groups.get(p)
        if group is not None and sizes[p] + len(value) > budget:
            out.append(_packed(*group))
            group = None
        if group is None:
            group = groups[p] = (key, [])
            sizes[p] = 0
        group[1].append(value)
        sizes[p] += len(value)
    out.extend(_packed(*group) for group in groups.values())
    return out


def _packed(key: bytes, values: list[bytes]) -> tuple[bytes, bytes]:
    sizes = pydantic_core.to_json([len(v) for v in values])
    return key, b"".join([MAGIC_V5, b"\n", sizes, b"\n", *values])
