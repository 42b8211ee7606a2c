"""A recorded briefing's bulk as zstd frames: what DuckDB stores of its JSON and Markdown, and its slim head.

A 100k window's briefing is ~75 MB of JSON and ~45 MB of Markdown; as VARCHARs DuckDB needed a few times that
while inserting them (past its default memory limit). Compressed they are a few MB of BLOB, and what SQL reads of
a briefing (its ids, D items, counts) stays in the emissions row as JSON without the per-source lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import cramjam

from processors.models import Briefing

# zstd's level 3 packs a briefing's JSON ~10:1 at a few hundred MB/s (~0.3 s for a 100k window's two texts).
_LEVEL = 3
_SLICE = 1 << 20  # characters (or bytes) handed to zstd at a time while packing
# A packed text is a series of zstd frames of this many bytes each (one stream to zstd): its file and its message
# parts are unpacked a frame at a time, never whole (~100 MB at 100k sources).
_FRAME = 4 << 20
_MAGIC = 0xFD2FB528  # a zstd frame's first four bytes, little-endian
_SKIPPABLE, _SKIPPABLE_MASK = 0x184D2A50, 0xFFFFFFF0  # skippable frames: magic 0x184D2A5?, RFC 8878 3.1.2
# What a briefing lists per source; its head is the briefing without them (what later briefings continue from).
PER_SOURCE = ("sources", "no_increment_sources", "rejected")


@dataclass(frozen=True)
class Body:
    """A briefing as it is recorded: its head JSON (per-source lists empty), its source count, its packed texts."""

    head_json: str
    sources: int
    briefing_zst: bytes
    markdown_zst: bytes | None  # None: restored from the briefings topic, which carries the JSON only

    @classmethod
    def of(cls, briefing: Briefing, briefing_json: str | bytes, markdown: str | bytes | None) -> Body:
        """Pack a briefing whose compact JSON (`briefing_json`) and Markdown are made already."""
        head = briefing.model_copy(update={name: [] for name in PER_SOURCE})
        return cls(
            head_json=head.model_dump_json(by_alias=True),
            sources=len(briefing.sources),
            briefing_zst=pack(briefing_json),
            markdown_zst=pack(markdown) if markdown is not None else None,
        )

    @classmethod
    def made(cls, briefing: Briefing, markdown: Iterable[bytes], json: Iterable[bytes]) -> Body:
        """Pack a briefing as its compact JSON (`json`: `briefing_json.json_pieces` of it) and its Markdown (UTF-8
        pieces) are made, neither held whole."""
        head = briefing.model_copy(update={name: [] for name in PER_SOURCE})
        return cls(
            head_json=head.model_dump_json(by_alias=True),
            sources=len(briefing.sources),
            briefing_zst=pack_pieces(json),
            markdown_zst=pack_pieces(markdown),
        )


def pack_pieces(pieces: Iterable[bytes]) -> bytes:
    """The pieces' concatenation packed as zstd frames of about `_FRAME` bytes each (`unpack_pieces` unpacks them
    one at a time; `unpack`, whole)."""
    packer = Packer()
    for piece in pieces:
        packer.add(piece)
    return packer.packed()


class Packer:
    """`pack_pieces` fed a piece at a time."""

    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self._pending: list[bytes] = []
        self._size = 0

    def add(self, piece: bytes) -> None:
        self._pending.append(piece)
        self._size += len(piece)
        if self._size >= _FRAME:
            self._frames.append(bytes(cramjam.zstd.compress(b"".join(self._pending), level=_LEVEL)))
            self._pending, self._size = [], 0

    def packed(self) -> bytes:
        """The frames of every piece added."""
        if self._pending or not self._frames:
            self._frames.append(bytes(cramjam.zstd.compress(b"".join(self._pending), level=_LEVEL)))
            self._pending, self._size = [], 0
        return b"".join(self._frames)


def pack(text: str | bytes) -> bytes:
    """The text's UTF-8 bytes as one zstd frame; a str is encoded a slice at a time (no whole copy of ~75 MB)."""
    if isinstance(text, bytes):
        return bytes(cramjam.zstd.compress(text, level=_LEVEL))
    packer = cramjam.zstd.Compressor(level=_LEVEL)
    for at in range(0, len(text), _SLICE):
        packer.compress(text[at : at + _SLICE].encode())
    return bytes(packer.finish())


def unpack(data: bytes) -> bytes:
    """The UTF-8 bytes `pack` packed."""
    return bytes(cramjam.zstd.decompress(data))


def unpack_pieces(data: bytes) -> Iterator[memoryview]:
    """`unpack`'s bytes a zstd frame at a time (views of what zstd unpacked, without `bytes`' copy)."""
    for frame in frames(data):
        yield memoryview(cramjam.zstd.decompress(frame))


def frames(data: bytes) -> Iterator[memoryview]:
    """Each zstd frame of `data`, in order (RFC 8878: header, blocks up to the last one, optional checksum);
    skippable frames are passed over, as zstd does."""
    view = memoryview(data)
    at = 0
    while at < len(view):
        end = _frame_end(view, at)
        if end > len(view):  # cut short: what zstd itself would refuse, never a walk past the end
            raise ValueError(f"a packed briefing text ends inside its zstd frame at byte {at}")
        if int.from_bytes(view[at : at + 4], "little") == _MAGIC:
            yield view[at:end]
        at = end


def _frame_end(view: memoryview, at: int) -> int:
    magic = int.from_bytes(view[at : at + 4], "little")
    if magic & _SKIPPABLE_MASK == _SKIPPABLE:  # a 4-byte size, then that many bytes of the writer's own
        return at + 8 + int.from_bytes(view[at + 4 : at + 8], "little")
    if magic != _MAGIC or at + 5 > len(view):
        raise ValueError(f"no zstd frame at byte {at} of a packed briefing text")
    descriptor = view[at + 4]
    single = descriptor >> 5 & 1  # a single segment has no window byte, and a content size of at least one
    at += 5 + (1 - single) + (0, 1, 2, 4)[descriptor & 3] + (single, 2, 4, 8)[descriptor >> 6]
    last = 0
    while not last:
        if at + 3 > len(view):
            return at + 3  # past the end: the caller refuses it
        header = int.from_bytes(view[at : at + 3], "little")
        last, kind, size = header & 1, header >> 1 & 3, header >> 3
        at += 3 + (1 if kind == 1 else size)  # an RLE block stores its one byte
    return at + 4 * (descriptor >> 2 & 1)  # the content checksum
