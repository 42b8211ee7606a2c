"""A briefing over the message limit travels in parts and is joined again byte for byte, whatever comes between."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Iterator

import pytest

from processors.briefing_parts import PART, Joined, Joiner, Part, PartError, Series, split

# Multi-byte text, so a cut falls inside a character: the parts are bytes, joined before decoding.
BIG = ('{"sources": [' + ",".join(f'"来源 {i} — note"' for i in range(500)) + "]}").encode()


def feed_all(joiner: Joiner, messages: list[tuple[int, Part]]) -> list[Joined]:
    out = []
    for offset, part in messages:
        joined = joiner.feed(offset, part.value, part.headers)
        if joined is not None:
            out.append(joined)
    return out


def test_a_briefing_that_fits_travels_whole_without_headers() -> None:
    [part] = split(b'{"axis": "x"}', "x-1", limit=100)
    assert part == Part(b'{"axis": "x"}', [])
    assert Joiner().feed(7, part.value, part.headers) == Joined(b'{"axis": "x"}', 7)


def test_a_large_briefing_is_cut_under_the_limit_and_joined_byte_for_byte() -> None:
    parts = split(BIG, "inference-2026-09-27-flush", limit=1000)
    assert len(parts) == -(-len(BIG) // 1000) > 1
    assert all(len(p.value) <= 1000 for p in parts)
    assert [dict(p.headers)[PART] for p in parts[:2]] == [
        f"1/{len(parts)}".encode(),
        f"2/{len(parts)}".encode(),
    ]
    with pytest.raises(UnicodeDecodeError):  # a cut falls inside a character somewhere
        for p in parts:
            p.value.decode()
    joiner = Joiner()
    assert feed_all(joiner, list(enumerate(parts, start=10))) == [Joined(BIG, 10)]
    assert joiner.oldest_open() is None


def test_parts_interleaved_with_other_briefings_and_a_series_resent_after_a_crash_are_joined() -> None:
    a = split(BIG, "a", limit=4000)
    b = split(BIG[::-1], "b", limit=4000)
    whole = Part(b"{}", [])
    # a's first attempt stops after two parts; b and a whole briefing come between; then a is sent again.
    messages = [a[0], b[0], a[1], whole, *b[1:], *a]
    joiner = Joiner()
    out = []
    open_from = []
    for offset, part in enumerate(messages):
        joined = joiner.feed(offset, part.value, part.headers)
        open_from.append(joiner.oldest_open())
        if joined is not None:
            out.append(joined)
    assert out == [Joined(b"{}", 3), Joined(BIG[::-1], 1), Joined(BIG, 3 + len(b))]
    assert open_from[3] == 0  # a reader must not count itself past the first part of a, still open
    assert open_from[-1] is None


def test_a_missing_part_or_a_wrong_checksum_is_an_error_not_a_different_briefing() -> None:
    parts = split(BIG, "a", limit=1000)
    joiner = Joiner()
    joiner.feed(0, parts[0].value, parts[0].headers)
    with pytest.raises(PartError, match="without the ones before"):
        joiner.feed(1, parts[2].value, parts[2].headers)
    assert joiner.oldest_open() is None  # the broken series is dropped
    joiner.feed(2, parts[0].value, parts[0].headers)
    damaged = [Part(p.value.replace(b"7", b"8"), p.headers) for p in parts[1:]]
    with pytest.raises(PartError, match="checksum"):
        feed_all(joiner, list(enumerate(damaged, start=3)))
    with pytest.raises(PartError, match="bad"):
        joiner.feed(9, b"x", [(PART, b"one of two")])


def test_parts_made_from_pieces_as_they_are_sent_are_the_parts_of_the_whole() -> None:
    cuts = [0, 1, 999, 1000, 1001, 3500, 7777, len(BIG)]
    series = Series.of(lambda: (BIG[a:b] for a, b in itertools.pairwise(cuts)), "a", limit=1000)
    assert len(series) == len(split(BIG, "a", limit=1000))
    assert list(series) == split(BIG, "a", limit=1000)
    [whole] = Series.of(lambda: (BIG[:10], BIG[10:]), "a", limit=len(BIG))
    assert whole == Part(BIG, [])


def test_a_briefing_sent_in_parts_is_never_held_whole() -> None:
    # A 100k window's JSON is ~80 MB: made a piece at a time, each part sent before the next is made.
    piece = 1 << 20
    pieces = 40

    def json_pieces() -> Iterator[bytes]:
        for i in range(pieces):
            yield bytes([48 + i % 10]) * piece

    tracemalloc.start()
    try:
        series = Series.of(json_pieces, "a", limit=4 * piece)
        sent = 0
        for part in series:
            sent += len(part.value)
            del part
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sent == pieces * piece and len(series) == 10
    assert peak < 3 * 4 * piece


def test_a_briefing_that_fits_one_message_is_read_once() -> None:
    # A recorded briefing's JSON is unpacked (zstd) anew at each read: its size and checksum, then its message.
    reads = []

    def pieces() -> Iterator[bytes]:
        reads.append(1)
        return iter((BIG[:10], BIG[10:]))

    assert list(Series.of(pieces, "a", limit=len(BIG))) == [Part(BIG, [])] and len(reads) == 1
    reads.clear()
    assert list(Series.of(pieces, "a", limit=1000)) == split(BIG, "a", limit=1000) and len(reads) == 2


def test_a_part_handed_to_the_producer_holds_no_second_copy_of_its_json() -> None:
    # The producer copies each ~24 MB part and compresses that copy: the unpacked pieces the part was joined from
    # are freed before it is handed on, not when the next part is made.
    piece = 1 << 20

    def json_pieces() -> Iterator[bytes]:
        for i in range(16):
            yield bytes([48 + i % 10]) * piece

    tracemalloc.start()
    try:
        held = []
        for part in Series.of(json_pieces, "a", limit=4 * piece):
            held.append(tracemalloc.get_traced_memory()[0])
            del part
    finally:
        tracemalloc.stop()
    assert len(held) == 4
    assert max(held) < 4 * piece + 2 * piece  # the part, and at most the piece its end was cut from
