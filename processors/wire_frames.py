"""Records of `predigest.documents`, v7: the notes compressed by the parse processes, each body a frame of its own.

A parse process packs the v4 records of its chunk's notes that share a partition (`pack_frames`): each
document's body (the part after its fourth newline) as a zstd frame of its own, which the state stores as it is
(`contents.body_zst`), and the rest of the records together as frames. The worker joins the frames of a batch into
records (`join_frames`) without reading them: the line `predigest.documents/v7`, the lengths of the notes without
their bodies, the lengths of the body frames (0: none), then the frames of the rests back to back (they decompress
as the notes' v4 records without their bodies), then the body frames. v6 (read only) was v7 with each body inside
its note's v4 record in the shared frames (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import cramjam
import pydantic_core
from predigest_native import zstd_frame, zstd_unpack_into

MAGIC_V7 = b"predigest.documents/v7"
MAGIC_V6 = b"predigest.documents/v6"  # read only: the bodies inside the shared frames
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
# Up to two zstd blocks, a frame made with the context the process keeps (`zstd_frame`, the same libzstd) is
# cramjam's byte for byte and ~10 µs a call less (cramjam sets a context up at each call); from 256 KiB on, cramjam's
# streamed frames differ, so larger inputs (none of the 10k root's bodies, few frames) stay cramjam's.
KEPT_CONTEXT_BYTES = 256 * 1024 - 1
_NL = b"\n"
_ZSTD = b"\x28\xb5\x2f\xfd"  # a zstd frame's magic number


@dataclass(frozen=True)
class Frame:
    """The v4 records of some notes of one documents partition, in order, as one zstd frame."""

    key: bytes  # the first note's key: the producer's partitioner puts it on that partition
    partition: int
    sizes: tuple[int, ...]  # each note's v4 record's length without its body
    data: bytes
    bodies: tuple[bytes, ...] = ()  # each note's body as a zstd frame of its own (b"": none)
    notes: int = 0  # its notes' v4 bytes, what a record's budget counts


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
    """Frames of v4 records (key, value): in order, the ones of one partition together up to `budget` bytes, each
    body a frame of its own."""
    placed = [(partitions.get(key.decode(), 0), len(value)) for key, value in records]
    out = []
    for indices in _groups(placed, budget):
        split = [_split(records[i][1]) for i in indices]
        data = compressed(b"".join(rest for rest, _ in split))
        first = indices[0]
        sizes = tuple(len(rest) for rest, _ in split)
        bodies = tuple(body for _, body in split)
        out.append(
            Frame(
                records[first][0], placed[first][0], sizes, data, bodies, sum(placed[i][1] for i in indices)
            )
        )
    return out


def _split(value: bytes) -> tuple[bytes | memoryview, bytes]:
    """A v4 record up to its body, and its body as a zstd frame (b"" for a record without one)."""
    at = -1
    for _ in range(4):  # a document's record: magic, header, summary, facts, then its body
        at = value.find(_NL, at + 1)
        if at < 0:
            return value, b""
    view = memoryview(value)
    return view[: at + 1], pack_body(view[at + 1 :])


def pack_body(body: bytes | memoryview) -> bytes:
    """A note's body as the state stores it: one zstd frame, its size declared in its header."""
    return compressed(body)


def compressed(data: bytes | memoryview) -> bytes:
    """`data` as one zstd frame at LEVEL, its size declared: cramjam's bytes, from a kept context when small."""
    if len(data) <= KEPT_CONTEXT_BYTES:
        return zstd_frame(data, LEVEL)
    return bytes(cramjam.zstd.compress(data, level=LEVEL))


def join_frames(frames: Sequence[Frame], budget: int) -> list[tuple[bytes, bytes]]:
    """v7 records of frames: in order, the frames of one partition together while their notes stay under
    `budget` bytes (a larger frame alone), keyed by the first frame's key."""
    out = []
    for indices in _groups([(f.partition, f.notes) for f in frames], budget):
        group = [frames[i] for i in indices]
        sizes = pydantic_core.to_json([n for f in group for n in f.sizes])
        bodies = [b for f in group for b in f.bodies]
        lengths = pydantic_core.to_json([len(b) for b in bodies])
        parts = [MAGIC_V7, _NL, sizes, _NL, lengths, _NL, *(f.data for f in group), *bodies]
        out.append((group[0].key, b"".join(parts)))
    return out


def one_note(rest: bytes | memoryview, body: bytes | memoryview) -> bytes:
    """A v7 record of one note, from its v4 record without its body and its body frame (a note set apart)."""
    lengths = b"[%d]\n[%d]" % (len(rest), len(body))
    return b"".join([MAGIC_V7, _NL, lengths, _NL, compressed(rest), body])


def pack_notes(
    records: Sequence[tuple[bytes, bytes]], partitions: Mapping[str, int], budget: int
) -> list[tuple[bytes, bytes]]:
    """v7 records of v4 records, in one step (notes routed in the worker itself)."""
    return join_frames(pack_frames(records, partitions, budget), budget)


def unpacked(frames: bytes | memoryview, total: int) -> bytearray:
    """A v6 or v7 record's notes back to back, from its frames; ValueError unless they come to `total` bytes, at most
    NOTE_RECORD_LIMIT, found without unpacking more than that."""
    if total > NOTE_RECORD_LIMIT:
        raise ValueError(
            f"documents record whose lengths declare {total} bytes of notes, over the {NOTE_RECORD_LIMIT} "
            "a record holds"
        )
    # Not copied into `bytes`: each note's parts are sliced out of it once (processors.wire).
    return _exactly(frames, total, "documents record whose notes", "its lengths declare")


def unpack_body(frame: bytes | memoryview) -> bytearray:
    """A note's body from its zstd frame; ValueError unless the frame declares its size, at most
    NOTE_RECORD_LIMIT, and unpacks to exactly that (found without unpacking more)."""
    return _exactly(frame, body_size(frame), "a note's body frame whose bytes", "it declares")


def _exactly(frames: bytes | memoryview, size: int, what: str, declared: str) -> bytearray:
    """`frames` unpacked into a buffer of `size` bytes (a context the thread keeps: ~8 µs a body less than
    cramjam's); ValueError, `what` they are, unless they fill it exactly."""
    # zstd fails once the buffer is full: a frame's own content size is not trusted (a hand-made record of a few KB
    # can expand to GiB, a poison record), and a frame without one is bounded alike.
    out = bytearray(size)
    try:
        n = zstd_unpack_into(frames, out)
    except ValueError as exc:
        raise ValueError(f"{what} do not decompress to the {size} bytes {declared} ({exc})") from None
    if n != size:
        raise ValueError(f"{what} come to {n} bytes, not the {size} {declared}")
    return out


def body_size(frame: bytes | memoryview) -> int:
    """The size a body frame's header declares (not unpacked); ValueError unless it is a zstd frame's declaring
    one up to NOTE_RECORD_LIMIT."""
    size = declared_size(frame)
    if size is None or size > NOTE_RECORD_LIMIT:
        raise ValueError(f"a note's body frame declaring {size} bytes, not a size up to {NOTE_RECORD_LIMIT}")
    return size


def declared_size(frame: bytes | memoryview) -> int | None:
    """The content size a zstd frame's header declares (RFC 8878, 3.1.1.1), None when it declares none."""
    if len(frame) < 6 or frame[:4] != _ZSTD:
        return None
    descriptor = frame[4]
    single = descriptor >> 5 & 1
    at = 5 + (1 - single) + (0, 1, 2, 4)[descriptor & 3]  # the window descriptor, the dictionary id
    n = (single, 2, 4, 8)[descriptor >> 6]
    if n == 0 or len(frame) < at + n:
        return None
    size = int.from_bytes(frame[at : at + n], "little")
    return size + 256 if n == 2 else size


def set_apart(note: memoryview, body: memoryview | None, most: int) -> bytes:
    """A note that does not read, to dead-letter alone: its v4 record, or a v7 record of it when its body frame
    does not unpack or would unpack past `most` bytes with the rest of the note: a few hundred bytes of frame can
    declare ~24 MiB, so a hand-made record's failed notes held that much each until sent (a window batch weighs a
    v7 record by its notes), each a dead letter over the producer's limit."""
    if body is None:
        return bytes(note)
    size = declared_size(body)
    if size is not None and len(note) + size <= most:
        try:
            return bytes(note) + unpack_body(body)
        except ValueError:
            pass
    return one_note(note, body)
