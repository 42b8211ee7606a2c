"""The documents topic's v5 records: a parse batch's notes of one partition in one record, under a byte budget,
each note read alone, so one that does not read is set apart and the others are kept."""

from __future__ import annotations

import pytest

from processors.fan_out import DocumentEvent, route_read
from processors.wire import (
    MAGIC,
    MAGIC_V5,
    decode_notes,
    decode_rows,
    encode_events,
    notes_in,
)
from streams.ownership import key_partition
from streams.settings import DEFAULT_AXES
from tests.processors.wire_v5 import pack_records
from tests.state_support import EXAMPLES, NOW, SH, raw_file, to_event

Records = list[tuple[bytes, bytes]]


def batch(partitions: dict[str, int]) -> Records:
    """The v4 records of every example note, as one parse batch routes them (raw offsets in order)."""
    out: Records = []
    for offset, p in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        raw = raw_file(p.relative_to(EXAMPLES).as_posix(), p.read_bytes(), mtime=1.0)
        events = route_read(raw, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=NOW, raw_offset=offset)[0]
        out.extend(encode_events(events, partitions))
    return out


def events(records: Records) -> list[DocumentEvent]:
    return [to_event(row) for _, v in records for row in decode_rows(v)]


def on(partition: int, records: Records, partitions: dict[str, int]) -> Records:
    return [(k, v) for k, v in records if partitions.get(k.decode(), 0) == partition]


@pytest.mark.parametrize("count", [1, 3, 8])
def test_a_batch_is_one_record_per_partition_holding_the_rows_of_its_notes_in_order(count: int) -> None:
    partitions = {a.name: key_partition(a.name, count) for a in DEFAULT_AXES}
    v4 = batch(partitions)
    v5 = pack_records(v4, partitions, 384 * 1024)
    used = sorted({partitions[k.decode()] for k, _ in v4})
    assert len(v4) > 10 * len(used)  # the records Kafka and Faust handle one by one, before
    assert sorted(partitions[k.decode()] for k, _ in v5) == used
    for key, value in v5:
        assert value.startswith(MAGIC_V5 + b"\n")
        p = partitions[key.decode()]
        # Where the producer puts it by its key is where every axis it holds lives; the versions of a path
        # stay in raw-offset order.
        assert {partitions[row.header.axis or ""] for row in decode_rows(value)} == {p}
        assert events([(key, value)]) == events(on(p, v4, partitions))
        # What the window agent weighs its batches by, read without decoding the record.
        assert notes_in(value) == len(on(p, v4, partitions))
    assert {notes_in(v) for _, v in v4} == {1}


def test_the_budget_cuts_a_partition_s_records_and_a_larger_note_goes_alone() -> None:
    v4 = batch({})
    sizes = sorted(len(v) for _, v in v4)
    budget = sizes[-2] - 1  # the two largest notes are over it, each alone; the others share records
    v5 = pack_records(v4, {}, budget)
    assert len(v4) > len(v5) > 2
    alone = 0
    for _, value in v5:
        notes = decode_notes(value)
        assert not notes.failed
        head = len(value.split(b"\n", 2)[1]) + len(MAGIC_V5) + 2
        one = len({row.header.path for row in notes.rows}) == 1
        assert len(value) - head <= budget or one
        alone += len(value) - head > budget
    assert alone == 2
    assert events(v5) == events(v4)  # in order, none lost


def test_a_note_that_does_not_read_is_set_apart_whole_and_the_others_are_kept() -> None:
    v4 = batch({})[:3]
    magic, header, rest = v4[1][1].split(b"\n", 2)
    broken = b"\n".join([magic, header.replace(b'"axes":[', b'"axes":{'), rest])
    (_, value), *more = pack_records([v4[0], (v4[1][0], broken), v4[2]], {}, 1 << 20)
    assert not more
    notes = decode_notes(value)
    assert [to_event(row) for row in notes.rows] == events([v4[0], v4[2]])
    [failed] = notes.failed
    # Its v4 record byte for byte: dead-lettered, it can be re-driven alone once the cause is fixed.
    assert (failed.index, failed.value) == (1, broken) and "GroupHeader" in failed.error
    with pytest.raises(ValueError):
        decode_rows(value)  # a reader that takes the record whole refuses it


@pytest.mark.parametrize(
    "value",
    [
        MAGIC_V5,
        MAGIC_V5 + b"\n",
        MAGIC_V5 + b"\n[]\n",
        MAGIC_V5 + b"\nnot json\n" + MAGIC,
        MAGIC_V5 + b'\n{"a":1}\nx',
        MAGIC_V5 + b"\n[2]\nx",  # a length that does not match
        MAGIC_V5 + b"\n[0,1]\nx",
        MAGIC_V5 + b"\n[true]\nx",
        MAGIC_V5 + b"\n[1.0]\nx",
    ],
)
def test_a_record_whose_note_lengths_do_not_read_is_refused_whole(value: bytes) -> None:
    with pytest.raises(ValueError):
        decode_notes(value)


def test_a_note_must_be_a_v4_record() -> None:
    (_, v4), *_ = batch({})
    (_, inner), *_ = pack_records([(b"k", v4)], {}, 1 << 20)
    for note in (b"x", inner, v4.replace(MAGIC, b"predigest.documents/v3", 1)):
        (_, value), *_ = pack_records([(b"k", v4), (b"k", note)], {}, 1 << 20)
        notes = decode_notes(value)
        assert len(notes.rows) == len(decode_rows(v4)) and [f.index for f in notes.failed] == [1]
