"""Records of `predigest.documents`, v6: a v5 record whose notes are compressed by the parse processes.

The worker's producer compressed every documents batch (zstd, ~65 µs a note on its event loop) and its consumer
decompressed it again. A parse process now packs the v4 records of its chunk's notes that share a partition into
zstd frames, under the byte budget (`pack_frames`); the worker joins the frames of a batch into records
(`join_frames`) without reading them: the line `predigest.documents/v6`, the notes' lengths (as in v5), then the
frames back to back, which decompress as the notes' v4 records back to back (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import cramjam
import pydantic_core

MAGIC_V6 = b"predigest.documents/v6"
# Level 1, not the producer's 3: a parse process spends ~0.7x the CPU on a note's frames (the box is CPU-bound)
# for ~1.2x the bytes (0.33 of the v4 bytes against 0.27; docs/performance.md "The parse processes' CPU").
LEVEL = 1
# The largest documents record, the topics' and producers' message limit (streams.kafka_settings): a 4 MiB note
# is a ~5.5 MiB record (v1 records, still readable, carried its text twice: ~9 MiB). A v6 record's notes unpack to
# no more: a note whose v4 record is over the limit becomes a rejection, and notes share a record only up to
# kafka.record_bytes (at most 1 MiB).
MAX_RECORD_BYTES = 24 * 1024 * 1024
# A note's v4 record over this becomes a rejection; so many bytes is also the most a v6 record's notes may declare.
# The headroom keeps the record's key and batch header, and a note's dead letter with its headers (an error cut at
# 2 000 characters), within MAX_RECORD_BYTES: a record declaring the limit itself unpacked to a note whose dead
# letter the producer refused, and the worker stopped on it at every start.
NOTE_RECORD_LIMIT = MAX_RECORD_BYTES - 64 * 1024
_NL = b"\n"


@dataclass(frozen=True)
class Frame:
    """The v4 records of some notes of one documents partition, in order, as one zstd frame."""

    key: bytes  # the first note's key: the producer's partitioner puts it on that partition
    partition: int
    sizes: tuple[int, ...]  # each note's v4 record's length
    data: bytes


def _groups(items: Sequence[tuple[int, int]], budget: int) -> list[list[int]]:
    """The indices of items (partition, bytes) in order: the ones of one partition together up to `budget` bytes
    (a larger one alone)."""
    open_: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    out: list[list[int]] = []
    for i, (p, size) in enumerate(items):
        group = open_.get(p)
        if group is not None and sizes[p] + size > budget:
            out.append(group)
            group = None
        if group is None:
            group = open_[p] = []
            sizes[p] = 0
        group.append(i)
        sizes[p] += size
    out.extend(open_.values())
    return out


def pack_frames(
    records: Sequence[tuple[bytes, bytes]], partitions: Mapping[str, int], budget: int
) -> list[Frame]:
    """Frames of v4 records (key, value): in order, the ones of one partition together up to `budget` bytes."""
    placed = [(partitions.get(key.decode(), 0), len(value)) for key, value in records]
    out = []
    for indices in _groups(placed, budget):
        values = [records[i][1] for i in indices]
        data = bytes(cramjam.zstd.compress(b"".join(values), level=LEVEL))
        first = indices[0]
        out.append(Frame(records[first][0], placed[first][0], tuple(len(v) for v in values), data))
    return out


def join_frames(frames: Sequence[Frame], budget: int) -> list[tuple[bytes, bytes]]:
    """v6 records of frames: in order, the frames of one partition together while their notes stay under
    `budget` bytes (a larger frame alone), keyed by the first frame's key."""
    out = []
    for indices in _groups([(f.partition, sum(f.sizes)) for f in frames], budget):
        group = [frames[i] for i in indices]
        sizes = pydantic_core.to_json([n for f in group for n in f.sizes])
        out.append((group[0].key, b"".join([MAGIC_V6, _NL, sizes, _NL, *(f.data for f in group)])))
    return out


def pack_notes(
    records: Sequence[tuple[bytes, bytes]], partitions: Mapping[str, int], budget: int
) -> list[tuple[bytes, bytes]]:
    """v6 records of v4 records, in one step (notes routed in the worker itself)."""
    return join_frames(pack_frames(records, partitions, budget), budget)


def unpacked(frames: bytes | memoryview, total: int) -> bytearray:
    """A v6 record's notes back to back, from its frames; ValueError unless they come to `total` bytes, at most
    NOTE_RECORD_LIMIT, found without unpacking more than that."""
    if total > NOTE_RECORD_LIMIT:
        raise ValueError(
            f"v6 documents record whose lengths declare {total} bytes of notes, over the {NOTE_RECORD_LIMIT} "
            "a record holds"
        )
    # zstd unpacks into this buffer and fails once it is full: a frame's own content size is not trusted (a
    # hand-made record of a few KB can expand to GiB, a poison record), and a frame without one is bounded alike.
    notes = bytearray(total)
    try:
        size = cramjam.zstd.decompress_into(frames, notes)
    except cramjam.DecompressionError as exc:
        raise ValueError(
            f"v6 documents record whose notes do not decompress to the {total} bytes its lengths declare ({exc})"
        ) from None
    if size != total:
        raise ValueError(f"v6 documents record whose notes come to {size} bytes, not {total}")
    return notes  # not copied into `bytes`: each note's parts are sliced out of it once (processors.wire)
