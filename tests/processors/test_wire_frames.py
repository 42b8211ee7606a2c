"""A zstd frame of `processors.wire_frames`: cramjam's bytes whichever way it is made (a state migrated by
`pack_body` equals one the parse processes filled, byte for byte), its content size declared; unpacked bounded."""

from __future__ import annotations

import random

import cramjam
import pytest

from processors.wire_frames import KEPT_CONTEXT_BYTES, LEVEL, compressed, declared_size, unpack_body, unpacked


def _text(size: int, seed: int) -> bytes:
    """`size` bytes of words and digits, some repeated: compressible as a note is."""
    rnd = random.Random(seed)
    letters = b"abcdefghij\xc3\xa9 "
    words = [bytes(rnd.choice(letters) for _ in range(rnd.randrange(2, 12))) for _ in range(400)]
    out = bytearray()
    while len(out) < size:
        out += rnd.choice(words) + b" " + str(rnd.randrange(10**6)).encode()
    return bytes(out[:size])


LIMIT = KEPT_CONTEXT_BYTES
SIZES = [0, 1, 13_000, 131_071, 131_072, 131_073, 200_003, LIMIT, LIMIT + 1, 300_000]


@pytest.mark.parametrize("size", SIZES)
def test_a_frame_is_cramjam_s_byte_for_byte_with_its_size_declared(size: int) -> None:
    for seed in range(3):
        data = _text(size, seed)
        frame = compressed(memoryview(data))
        assert frame == bytes(cramjam.zstd.compress(data, level=LEVEL))
        assert declared_size(frame) == size
        assert unpack_body(frame) == data


def test_frames_made_one_after_another_do_not_depend_on_the_ones_before() -> None:
    inputs = [_text(size, 7) for size in (40_000, 9, 120_000, 9, 40_000)]
    frames = [compressed(data) for data in inputs]
    assert frames[1] == frames[3] and frames[0] == frames[4]
    assert frames == [bytes(cramjam.zstd.compress(data, level=LEVEL)) for data in inputs]


def test_frames_back_to_back_unpack_whole_and_never_past_what_they_declare() -> None:
    inputs = [_text(size, 3) for size in (5_000, 0, 150_000, 300_000)]
    frames = b"".join(compressed(data) for data in inputs)
    assert unpacked(frames, sum(map(len, inputs))) == b"".join(inputs)
    with pytest.raises(ValueError, match="do not decompress to the 454999 bytes"):
        unpacked(frames, 454_999)  # one byte short: refused, nothing written past it
    with pytest.raises(ValueError, match="do not decompress"):
        unpacked(frames[:-1], 455_000)
    body = compressed(inputs[0])
    with pytest.raises(ValueError, match="do not decompress"):
        unpack_body(body[:-2] + bytes([body[-2] ^ 0xFF, body[-1]]))
