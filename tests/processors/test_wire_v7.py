"""The documents topic's v7 records: notes the parse processes compressed, chunk by chunk, each body a frame of
its own, and the worker joined without reading them."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import cramjam
import pytest

from processors.parse_stage import Routed, RouteParams, documents_records, packed
from processors.wire import StoredDocument, decode_notes, decode_rows, load_document, note_records, notes_in
from processors.wire_frames import (
    MAGIC_V7,
    NOTE_RECORD_LIMIT,
    declared_size,
    join_frames,
    pack_body,
    pack_frames,
    pack_notes,
    unpack_body,
)
from streams.ownership import key_partition
from streams.settings import DEFAULT_AXES
from tests.processors.test_wire_v5 import Records, batch, events, on
from tests.state_support import SH, to_event


@pytest.mark.parametrize("count", [1, 3])
def test_chunks_compressed_apart_and_joined_hold_the_batch_s_notes_in_order_per_partition(count: int) -> None:
    partitions = {a.name: key_partition(a.name, count) for a in DEFAULT_AXES}
    v4 = batch(partitions)
    chunks = [v4[i : i + 5] for i in range(0, len(v4), 5)]  # as the parse processes get a batch
    frames = [frame for chunk in chunks for frame in pack_frames(chunk, partitions, 384 * 1024)]
    v6 = join_frames(frames, 384 * 1024)
    used = sorted({partitions[k.decode()] for k, _ in v4})
    # One record per partition, as one v5 record of the whole batch: the chunks' frames joined.
    assert len(frames) > len(v6) and sorted(partitions[k.decode()] for k, _ in v6) == used
    for key, value in v6:
        assert value.startswith(MAGIC_V7 + b"\n")
        p = partitions[key.decode()]
        assert events([(key, value)]) == events(on(p, v4, partitions))
        assert notes_in(value) == len(on(p, v4, partitions))
    # What the producer no longer compresses; each body a frame of its own packs a little worse than shared.
    assert sum(len(v) for _, v in v6) < sum(len(v) for _, v in v4) / 2.5


def test_the_budget_cuts_records_at_frames_and_a_larger_frame_goes_alone() -> None:
    v4 = batch({})
    sizes = sorted(len(v) for _, v in v4)
    budget = sizes[-2] - 1  # the two largest notes are over it, each alone
    v6 = pack_notes(v4, {}, budget)
    assert len(v4) > len(v6) > 2
    alone = 0
    for _, value in v6:
        notes = decode_notes(value)
        total = sum(len(note) for note in note_records(value))  # the notes' v4 bytes, bodies and all
        assert not notes.failed and (total <= budget or len({row.header.path for row in notes.rows}) == 1)
        alone += total > budget
    assert alone == 2
    assert events(v6) == events(v4)


def test_a_note_that_does_not_read_is_set_apart_whole_and_the_others_are_kept() -> None:
    v4 = batch({})[:3]
    broken = v4[1][1].replace(b'"axes":[', b'"axes":{', 1)
    [(_, value)] = pack_notes([v4[0], (v4[1][0], broken), v4[2]], {}, 1 << 20)
    notes = decode_notes(value)
    assert [to_event(row) for row in notes.rows] == events([v4[0], v4[2]])
    [failed] = notes.failed
    assert (failed.index, failed.value) == (1, broken)  # its v4 record, uncompressed: re-driven alone


def _damaged() -> list[bytes]:
    [(_, value)] = pack_notes(batch({})[:2], {}, 1 << 20)
    head, frames = value.split(b"]\n", 1)  # at the lengths line's end (a frame may hold these bytes too)
    return [
        head + b"]\n" + frames[: len(frames) // 2],  # cut short
        head + b"]\n" + b"not zstd",
        head.replace(b"[", b"[1,", 1) + b"]\n" + frames,  # lengths that do not add up to the notes
    ]


@pytest.mark.parametrize("value", _damaged())
def test_a_record_whose_frames_do_not_decompress_to_its_lengths_is_refused_whole(value: bytes) -> None:
    with pytest.raises(ValueError):
        decode_notes(value)


def test_the_worker_joins_the_processes_frames_and_packs_notes_routed_in_it_in_order() -> None:
    v4 = batch({})
    params = RouteParams(axes=DEFAULT_AXES, zone=SH, max_bytes=4 << 20, message_limit=24 << 20)
    routed = [Routed(path=str(i), records=(record,)) for i, record in enumerate(v4)]
    # Chunks from the processes, and between them a note refused in the worker (its process died on it).
    mixed = [*packed(routed[:4], params), routed[4], *packed(routed[5:], params)]
    records: Records = documents_records(mixed, params)
    assert all(v.startswith(MAGIC_V7 + b"\n") for _, v in records)
    assert events(records) == events(v4)
    assert sum(len(v) for _, v in records) < sum(len(v) for _, v in v4) / 2.5  # every note compressed


def test_a_packed_note_keeps_all_it_says_of_itself_but_its_records() -> None:
    params = RouteParams(axes=DEFAULT_AXES, zone=SH, max_bytes=4 << 20, message_limit=24 << 20)
    routed = [
        Routed(path=str(i), records=(record,), warnings=("w",), warning_codes=("decode",), error="e")
        for i, record in enumerate(batch({})[:3])
    ]
    out = packed(routed, params)
    assert out[0].frames and not any(r.frames for r in out[1:])
    assert [replace(r, frames=()) for r in out] == [replace(r, records=(), packed=1) for r in routed]


def test_a_note_whose_body_is_not_utf8_is_stored_unread_and_the_others_keep_their_text_as_it_came() -> None:
    # The summaries and bodies are kept as their UTF-8 bytes, not decoded; a body frame is not unpacked at ingest:
    # one that is not UTF-8 is stored as it came, and refused by whoever reads it whole (sinks.unreadable).
    v4 = batch({})[:3]
    broken = v4[1][1] + b"\xff"
    [(_, value)] = pack_notes([v4[0], (v4[1][0], broken), v4[2]], {}, 1 << 20)
    notes = decode_notes(value)
    assert not notes.failed and [r.header.path for r in notes.rows] == [
        r.header.path for r in decode_notes(pack_notes(v4, {}, 1 << 20)[0][1]).rows
    ]
    broken_path = json.loads(v4[1][1].split(b"\n", 2)[1])["path"]
    for row in notes.rows:
        assert row.stored is not None
        if row.header.path == broken_path:
            with pytest.raises(ValueError, match="not UTF-8"):
                load_document(row.stored)
    for _, v in (v4[0], v4[2]):  # the others': the bytes their records carry, stored as they are
        [row, *_] = decode_notes(v).rows
        _, _, summary, _, body = v.split(b"\n", 4)
        assert row.stored is not None and (row.stored.summary_json, row.stored.body_json) == (summary, body)


def _streamed(data: bytes) -> bytes:
    compressor = cramjam.zstd.Compressor(level=1)  # writes no content size in the frame's header
    compressor.compress(data)
    return bytes(compressor.finish())


def _with_body_frame(value: bytes, index: int, frame: bytes) -> bytes:
    """A v7 record with the body frame of its note `index` replaced (its lengths line says so)."""
    magic, sizes, lengths, rest = value.split(b"\n", 3)
    body_sizes = json.loads(lengths)
    at = len(rest) - sum(body_sizes) + sum(body_sizes[:index])
    rest = rest[:at] + frame + rest[at + body_sizes[index] :]
    body_sizes[index] = len(frame)
    return b"\n".join([magic, sizes, json.dumps(body_sizes, separators=(",", ":")).encode(), rest])


def test_a_v7_note_is_stored_as_its_body_frame_and_reads_back_whole() -> None:
    v4 = batch({})[:3]
    [(_, value)] = pack_notes(v4, {}, 1 << 20)
    rows = decode_notes(value).rows
    assert [to_event(row) for row in rows] == events(v4)
    notes = {json.loads(note.split(b"\n", 2)[1])["path"]: note for _, note in v4}
    for row in rows:  # one a note and axis
        _, _, summary, _, body = notes[row.header.path].split(b"\n", 4)
        assert row.stored is not None and row.stored.packed and row.stored.summary_json == summary
        assert (
            row.stored.body_frame() == row.stored.body_json == pack_body(body)
        )  # stored as the frame it came
        assert bytes(unpack_body(row.stored.body_frame())) == body


@pytest.mark.parametrize(
    "frame",
    [
        b"not zstd at all",
        _streamed(b'{"text":"x"}'),  # no content size in its header: not bounded, refused
        b"\x28\xb5\x2f\xfd\xa0"
        + (NOTE_RECORD_LIMIT + 1).to_bytes(4, "little")
        + b"\x01\x00\x00",  # past the limit
    ],
    ids=["garbage", "no-size", "too-large"],
)
def test_a_note_whose_body_frame_header_is_damaged_is_set_apart_and_the_others_are_kept(frame: bytes) -> None:
    v4 = batch({})[:3]
    [(_, value)] = pack_notes(v4, {}, 1 << 20)
    damaged = _with_body_frame(value, 1, bytes(frame))
    notes = decode_notes(damaged)
    assert [to_event(row) for row in notes.rows] == events([v4[0], v4[2]])
    [failed] = notes.failed
    assert failed.index == 1 and "body frame" in failed.error
    # Its dead letter, re-driven alone, fails the same way (its v4 record, or a v7 record of it).
    with pytest.raises(ValueError, match=re.escape(failed.error)):
        decode_rows(failed.value)


@pytest.mark.parametrize(
    "frame",
    [
        pack_body(b'{"text":"x"}')[:-3],  # cut short
        pack_body(b'{"text":"\xff"}'),  # not UTF-8
        pack_body(b'{"text":"\xed\xa0\x80"}'),  # an encoded surrogate: json.loads alone would take it
    ],
    ids=["cut", "not-utf8", "surrogate"],
)
def test_a_well_headed_body_frame_is_stored_unread_and_refused_by_its_reader(frame: bytes) -> None:
    # The worker checks a body frame's header only (not unpacked at ingest): the readers report the rest.
    v4 = batch({})[:3]
    [(_, value)] = pack_notes(v4, {}, 1 << 20)
    notes = decode_notes(_with_body_frame(value, 1, frame))
    assert not notes.failed and len(notes.rows) == len(decode_notes(value).rows)
    damaged = [row for row in notes.rows if row.stored is not None and row.stored.body_frame() == frame]
    assert damaged
    for row in damaged:
        assert row.stored is not None
        with pytest.raises(ValueError, match=r"body frame|not UTF-8"):
            load_document(row.stored)


@pytest.mark.parametrize(
    "body",
    [
        b'{"txt":"x","sections":[]}',  # a byte flipped in a frame with no checksum: UTF-8 JSON, not a body
        b"[1,2]",
        b'{"text":"x","sections":[[1]]}',
        b'{"text":"x","sections":[["1","h",1,"a","b"]]}',
        b"[" * 100_000 + b"]" * 100_000,  # nested past the parser's recursion
    ],
    ids=["no-text", "a-list", "short-section", "bad-span", "nested"],
)
def test_a_body_that_is_utf8_json_but_not_a_body_is_refused_as_a_value_error(body: bytes) -> None:
    # Its readers catch ValueError (sinks.unreadable): a KeyError or TypeError would fail the whole briefing.
    with pytest.raises(ValueError, match="does not read back"):
        load_document(StoredDocument('{"path":"a.md"}', pack_body(body), packed=True))


def test_a_body_frame_s_declared_size_is_read_from_its_header() -> None:
    for size in (0, 100, 300, 70_000, 5_000_000):
        assert declared_size(pack_body(b"a" * size)) == size
    assert declared_size(b"\x28\xb5\x2f\xfd") is None


def test_a_failed_note_s_dead_letter_is_never_much_larger_than_the_record_it_came_in() -> None:
    # A hand-made record of a few hundred bytes a note: rests that do not read, each with a valid body frame that
    # declares (and unpacks to) nearly NOTE_RECORD_LIMIT. Unpacked into v4 dead letters, each was over the
    # producer's limit (refused at every start) and the record's notes held ~24 MiB each until sent.
    body = pack_body(b" " * (NOTE_RECORD_LIMIT - 10))
    rest = b"predigest.documents/v4\n" + b"x" * 1000 + b"\n"
    n = 3
    value = b"".join(
        [
            MAGIC_V7,
            b"\n",
            json.dumps([len(rest)] * n).encode(),
            b"\n",
            json.dumps([len(body)] * n).encode(),
            b"\n",
            bytes(cramjam.zstd.compress(rest * n, level=1)),
            body * n,
        ]
    )
    notes = decode_notes(value)
    assert len(notes.failed) == n
    assert all(len(f.value) <= len(value) for f in notes.failed)
    for failed in notes.failed:  # each a record of its own, which fails alone the same way
        again = decode_notes(failed.value)
        assert again.count == 1 and [f.error for f in again.failed] == [failed.error]
