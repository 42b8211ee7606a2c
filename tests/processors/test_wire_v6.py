"""The documents topic's v6 records: v5 records whose notes the parse processes compressed, chunk by chunk, and
the worker joined without reading them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from processors.parse_stage import Routed, RouteParams, documents_records, packed
from processors.wire import decode_notes, notes_in
from processors.wire_frames import MAGIC_V6, join_frames, pack_frames, pack_notes
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
        assert value.startswith(MAGIC_V6 + b"\n")
        p = partitions[key.decode()]
        assert events([(key, value)]) == events(on(p, v4, partitions))
        assert notes_in(value) == len(on(p, v4, partitions))
    assert (
        sum(len(v) for _, v in v6) < sum(len(v) for _, v in v4) / 3
    )  # what the producer no longer compresses


def test_the_budget_cuts_records_at_frames_and_a_larger_frame_goes_alone() -> None:
    v4 = batch({})
    sizes = sorted(len(v) for _, v in v4)
    budget = sizes[-2] - 1  # the two largest notes are over it, each alone
    v6 = pack_notes(v4, {}, budget)
    assert len(v4) > len(v6) > 2
    alone = 0
    for _, value in v6:
        notes = decode_notes(value)
        total = sum(int(n) for n in value.split(b"\n", 2)[1].strip(b"[]").split(b","))
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
    assert all(v.startswith(MAGIC_V6 + b"\n") for _, v in records)
    assert events(records) == events(v4)
    assert sum(len(v) for _, v in records) < sum(len(v) for _, v in v4) / 3  # every note compressed


def test_a_packed_note_keeps_all_it_says_of_itself_but_its_records() -> None:
    params = RouteParams(axes=DEFAULT_AXES, zone=SH, max_bytes=4 << 20, message_limit=24 << 20)
    routed = [
        Routed(path=str(i), records=(record,), warnings=("w",), warning_codes=("decode",), error="e")
        for i, record in enumerate(batch({})[:3])
    ]
    out = packed(routed, params)
    assert out[0].frames and not any(r.frames for r in out[1:])
    assert [replace(r, frames=()) for r in out] == [replace(r, records=(), packed=1) for r in routed]


def test_a_note_whose_body_is_not_utf8_is_set_apart_and_the_others_keep_their_text_as_it_came() -> None:
    # The summaries and bodies are kept as their UTF-8 bytes, not decoded: the check that decoding made must still refuse a
    # damaged one here, not fail the whole batch in the store.
    v4 = batch({})[:3]
    broken = v4[1][1] + b"\xff"
    [(_, value)] = pack_notes([v4[0], (v4[1][0], broken), v4[2]], {}, 1 << 20)
    notes = decode_notes(value)
    assert [to_event(row) for row in notes.rows] == events([v4[0], v4[2]])
    [failed] = notes.failed
    assert (failed.index, failed.value) == (1, broken) and "UTF-8" in failed.error
    for _, v in (v4[0], v4[2]):  # the others': the bytes their records carry, stored as they are
        [row, *_] = decode_notes(v).rows
        _, _, summary, _, body = v.split(b"\n", 4)
        assert row.stored is not None and (row.stored.summary_json, row.stored.body_json) == (summary, body)
