"""A recorded briefing's bulk as zstd frames: what DuckDB stores of its JSON and Markdown, and its slim head.

A 100k window's briefing is ~75 MB of JSON and ~45 MB of Markdown; as VARCHARs DuckDB needed a few times that
while inserting them (past its default memory limit). Compressed they are a few MB of BLOB, and what SQL reads of
a briefing (its ids, D items, counts) stays in the emissions row as JSON without the per-source lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import cramjam

from processors.models import Briefing
from sinks.briefing_json import json_pieces

# zstd's level 3 packs a briefing's JSON ~10:1 at a few hundred MB/s (~0.3 s for a 100k window's two texts).
_LEVEL = 3
_SLICE = 1 << 20  # characters (or bytes) handed to zstd at a time while packing
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
    def made(cls, briefing: Briefing, markdown: Iterable[bytes]) -> Body:
        """Pack a briefing as its JSON and its Markdown (UTF-8 pieces) are made, neither held whole."""
        head = briefing.model_copy(update={name: [] for name in PER_SOURCE})
        return cls(
            head_json=head.model_dump_json(by_alias=True),
            sources=len(briefing.sources),
            briefing_zst=pack_pieces(json_pieces(briefing)),
            markdown_zst=pack_pieces(markdown),
        )


def pack_pieces(pieces: Iterable[bytes]) -> bytes:
    """The pieces' concatenation as one zstd frame, handed to zstd about a slice at a time."""
    packer = cramjam.zstd.Compressor(level=_LEVEL)
    pending: list[bytes] = []
    size = 0
    for piece in pieces:
        pending.append(piece)
        size += len(piece)
        if size >= _SLICE:
            packer.compress(b"".join(pending))
            pending, size = [], 0
    packer.compress(b"".join(pending))
    return bytes(packer.finish())


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


def unpack_view(data: bytes) -> memoryview:
    """`unpack`'s bytes as zstd made them, without `bytes`' copy of them (~100 MB for a 100k window's file)."""
    return memoryview(cramjam.zstd.decompress(data))
