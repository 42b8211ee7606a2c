"""Records of `predigest.documents` that pack notes (v5, v6, v7): their lengths lines, their notes laid out, and
what a window batch weighs them (processors.wire reads each note)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from processors.wire_frames import MAGIC_V6, MAGIC_V7, unpacked

MAGIC_V5 = b"predigest.documents/v5"  # read only: v6 with its notes uncompressed
_NL = b"\n"
# A window batch weighs a record by its notes, or by the bytes its notes come to in steps of this when more: a
# batch's notes are held until its dead letters are sent, and a few hundred bytes of hand-made v6 frames can
# declare NOTE_RECORD_LIMIT, so a batch of them held ~24 MiB a record (12 GiB at batch_records = 500). Notes of
# the usual sizes (~6 KiB of v4 record) weigh their count as before.
WEIGHT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Packed:
    """A packed record's notes back to back, where each starts and ends in them, and (v7) each one's body frame
    (None: the note holds its body, or has none)."""

    notes: bytes | bytearray
    spans: list[tuple[int, int]]
    bodies: list[memoryview | None]


def is_packed(value: bytes) -> bool:
    return value.startswith((MAGIC_V7 + _NL, MAGIC_V6 + _NL, MAGIC_V5 + _NL))


def notes_in(value: bytes) -> int:
    """How many notes a record holds, read from a packed record's lengths line without decoding it; 1 for
    another."""
    if not is_packed(value):
        return 1
    start = len(MAGIC_V5) + 1
    end = value.find(_NL, start)
    return value.count(b",", start, end) + 1 if end > 0 else 1


def batch_weight(value: bytes) -> int:
    """A record's weight in a window batch: its notes, or the bytes they declare in WEIGHT_BYTES steps if more."""
    if not is_packed(value):
        return max(1, len(value) // WEIGHT_BYTES)
    start = len(MAGIC_V5) + 1
    end = value.find(_NL, start)
    try:
        declared = sum(map(int, value[start + 1 : end - 1].split(b","))) if end > 0 else 0
    except ValueError:  # a lengths line that does not read: refused whole, unexpanded, by decode_notes
        declared = 0
    return max(notes_in(value), declared // WEIGHT_BYTES)


def read_packed(value: bytes) -> Packed:
    """A v7, v6 or v5 record's notes laid out; ValueError when its lengths or frames do not read."""
    start = len(MAGIC_V5) + 1  # v6's and v7's magic are as long
    end = value.find(_NL, start)
    sizes = _lengths(value, start, end, 1)
    at = end + 1
    bodies: list[memoryview | None] = [None] * len(sizes)
    frames = memoryview(value)[at:]
    if value.startswith(MAGIC_V7):
        end = value.find(_NL, at)
        lengths = _lengths(value, at, end, 0)
        if len(lengths) != len(sizes) or sum(lengths) > len(value) - end - 1:
            raise ValueError(
                f"v7 documents record whose body lengths do not match it ({value[at : at + 40]!r})"
            )
        frames, bodies = _bodies(memoryview(value)[end + 1 :], lengths)
    notes: bytes | bytearray = value
    if not value.startswith(MAGIC_V5):
        notes, at = unpacked(frames, sum(sizes)), 0
    elif sum(sizes) != len(value) - at:
        raise ValueError(
            f"v5 documents record whose note lengths do not match it ({value[start : start + 40]!r})"
        )
    spans = []
    for n in sizes:
        spans.append((at, at + n))
        at += n
    return Packed(notes, spans, bodies)


def _bodies(frames: memoryview, lengths: list[int]) -> tuple[memoryview, list[memoryview | None]]:
    """A v7 record's shared frames, and its body frames (the last bytes) one a note (None for a length of 0)."""
    at = len(frames) - sum(lengths)
    shared = frames[:at]
    bodies: list[memoryview | None] = []
    for n in lengths:
        bodies.append(frames[at : at + n] if n else None)
        at += n
    return shared, bodies


def _lengths(value: bytes, start: int, end: int, least: int) -> list[int]:
    """A lengths line: a JSON list of integers of at least `least` each; ValueError if it is not one."""
    sizes = json.loads(value[start:end]) if end > 0 else None
    if not isinstance(sizes, list) or not sizes or not all(type(n) is int and n >= least for n in sizes):
        raise ValueError(f"documents record whose note lengths do not read ({value[start : start + 40]!r})")
    return sizes
