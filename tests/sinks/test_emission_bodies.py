"""A recorded briefing's texts are packed so that its files and messages can be made a few MB at a time."""

from __future__ import annotations

import os

import pytest

from sinks.emission_bodies import pack, pack_pieces, unpack, unpack_pieces


def a_text(megabytes: int) -> bytes:
    """Lines that zstd packs about as well as a briefing's JSON (repeated words, distinct numbers and ids)."""
    line = b'{"path": "inbox/jay/2026-09-27-%06d-kv.md", "relevance": 0.%04d, "id": "%s"},\n'
    return b"".join(line % (i, i % 9973, os.urandom(6).hex().encode()) for i in range(megabytes * 13_000))


def test_a_large_packed_text_unpacks_a_few_mb_at_a_time_to_the_same_bytes() -> None:
    text = a_text(24)
    packed = pack_pieces(text[at : at + 300_000] for at in range(0, len(text), 300_000))
    pieces = [bytes(p) for p in unpack_pieces(packed)]
    assert b"".join(pieces) == unpack(packed) == text
    # The `.json` file and the message parts of a 100k window are made from pieces this size, not ~100 MB.
    assert len(pieces) > 1 and max(len(p) for p in pieces) <= 5 << 20


def test_a_text_recorded_as_one_frame_or_empty_still_unpacks() -> None:
    text = a_text(2)
    for packed, expected in ((pack(text.decode()), text), (pack_pieces([]), b""), (pack(b""), b"")):
        assert b"".join(unpack_pieces(packed)) == expected == unpack(packed)


@pytest.mark.timeout(20)
def test_a_damaged_packed_text_is_refused_at_every_cut_not_walked_forever() -> None:
    """A recorded text cut short (a damaged row): its files and messages fail with an error, as zstd refuses it,
    never a walk past its end (the event loop would spin in the outbox and the worker be evicted)."""
    packed = pack_pieces([a_text(1), a_text(1)])
    for cut in (len(packed) // 2, len(packed) - 1, 3, 6):
        with pytest.raises(ValueError):
            list(unpack_pieces(packed[:cut]))


def test_a_skippable_frame_is_passed_over_as_zstd_does() -> None:
    text = a_text(1)
    skippable = (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    packed = skippable + pack_pieces([text]) + skippable
    assert b"".join(unpack_pieces(packed)) == unpack(packed) == text
