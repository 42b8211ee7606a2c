"""A v6 record's notes are unpacked only up to what its lengths line declares (at most the largest record): a
hand-made record on the documents topic that would expand to GiB is refused, never expanded (a poison record)."""

from __future__ import annotations

import subprocess
import sys

import cramjam
import pytest

from processors.wire import WEIGHT_BYTES, batch_weight, decode_notes, notes_in
from processors.wire_frames import MAGIC_V6, MAX_RECORD_BYTES, NOTE_RECORD_LIMIT
from streams.worker_process import PROJECT
from tests.processors.test_wire_v5 import batch, events
from tests.processors.wire_v6 import pack_v6

_BLOCK = 128 * 1024  # a zstd block's largest content (RFC 8878 3.1.1.2.4)


def rle_frame(size: int) -> bytes:
    """A zstd frame of `size` b"a"s as RLE blocks (4 bytes each), without a content size: ~32 KB a GiB."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # magic; no content size, a 128 KiB window
    while size > 0:
        n = min(_BLOCK, size)
        size -= n
        out += ((n << 3) | (1 << 1) | (size == 0)).to_bytes(3, "little") + b"a"  # an RLE block, last or not
    return bytes(out)


def bomb(declared: int = 1000, expands_to: int = 1 << 30) -> bytes:
    """A documents record of a few KB whose lengths line declares `declared` bytes of notes, expanding further."""
    return b"\n".join([MAGIC_V6, b"[%d]" % declared, rle_frame(expands_to)])


# Run in a child whose address space allows 256 MiB more than it has once imported: a GiB never fits in it.
_UNDER_A_SMALL_RLIMIT = """
import resource, sys
from processors.wire import WEIGHT_BYTES, batch_weight, decode_notes, notes_in
from tests.processors.test_wire_v6_bound import bomb
size = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))
try:
    decode_notes(bomb())
except ValueError as exc:
    print("refused:", exc)
"""


def test_a_record_that_would_expand_to_a_gib_is_refused_without_expanding_it() -> None:
    child = [sys.executable, "-c", _UNDER_A_SMALL_RLIMIT]
    done = subprocess.run(child, cwd=PROJECT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused: documents record whose notes do not decompress to the 1000 bytes")
    assert len(bomb()) < 40_000


def test_lengths_declaring_more_than_the_largest_record_are_refused_before_anything_is_allocated() -> None:
    # One that does expand to what it declares, just over what a note's record may be; one declaring the message
    # limit itself (its one note's dead letter would be over it: the worker stopped on it); one declaring a PiB.
    cases = (
        (NOTE_RECORD_LIMIT + 1, NOTE_RECORD_LIMIT + 1),
        (MAX_RECORD_BYTES, MAX_RECORD_BYTES),
        (1 << 50, 1),
    )
    for declared, expands_to in cases:
        with pytest.raises(
            ValueError, match=f"declare {declared} bytes of notes, over the {NOTE_RECORD_LIMIT}"
        ):
            decode_notes(bomb(declared, expands_to))


def test_frames_that_expand_just_past_their_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="do not decompress to the 1000 bytes"):
        decode_notes(bomb(1000, expands_to=1001))
    assert [len(note.value) for note in decode_notes(bomb(1000, expands_to=1000)).failed] == [1000]


def test_a_frame_cut_short_is_refused_though_what_it_holds_fits() -> None:
    whole = bomb(3 * _BLOCK, expands_to=3 * _BLOCK)
    assert [len(note.value) for note in decode_notes(whole).failed] == [3 * _BLOCK]  # it reads, whole
    with pytest.raises(ValueError, match=f"do not decompress to the {3 * _BLOCK} bytes"):
        decode_notes(whole[:-4])  # its last block gone


def test_a_frame_without_a_content_size_reads_as_one_with_it() -> None:
    v4 = batch({})[:3]
    [(key, value)] = pack_v6(v4, {}, 1 << 20)
    head, _ = value.split(b"]\n", 1)  # the lengths line ends at the first (a frame may hold these bytes too)
    streamed = cramjam.zstd.Compressor(level=3)  # writes no content size in the frame's header
    streamed.compress(b"".join(v for _, v in v4))
    frames = bytes(streamed.finish())
    assert frames[4] & 0xE0 == 0  # no Frame_Content_Size, not single-segment: the size is not there
    assert events([(key, head + b"]\n" + frames)]) == events(v4)


def test_a_window_batch_weighs_a_record_by_the_bytes_it_declares_when_more_than_its_notes() -> None:
    # The window agent holds a batch's notes until their dead letters are sent, and a batch stops at 500 of
    # weight: records of a few hundred bytes declaring the largest note each fill it after two, not 500 (12 GiB).
    assert batch_weight(bomb(NOTE_RECORD_LIMIT, 1)) == NOTE_RECORD_LIMIT // WEIGHT_BYTES >= 250
    v6 = pack_v6(batch({}), {}, 1 << 20)
    assert [batch_weight(value) for _, value in v6] == [notes_in(value) for _, value in v6]  # as before
    assert batch_weight(b"predigest.documents/v6\n[1,x]\n") == 2  # refused whole, unexpanded, by the decode
    assert batch_weight(b"predigest.documents/v4\n" + b"x" * 3 * WEIGHT_BYTES) == 3
