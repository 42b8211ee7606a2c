"""The documents topic's v4 records: one per note and partition, the text once with its source facts, events
back equal; v3 (no facts), v2 and v1 records (one per axis) still readable."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.documents import parse_document
from processors.fan_out import DocumentEvent, route_read
from processors.models import RawFile
from processors.source_facts import dump_facts, source_facts
from processors.wire import (
    MAGIC,
    MAGIC_V2,
    MAGIC_V3,
    GroupHeader,
    decode_notes,
    decode_rows,
    encode_events,
    load_document,
    load_summary,
    store_document,
)
from processors.wire_frames import pack_notes
from streams.ownership import key_partition
from streams.settings import DEFAULT_AXES
from tests.processors.wire_v2 import encode_v2
from tests.processors.wire_v3 import encode_v3
from tests.state_support import EXAMPLES, NOW, SH, to_event


def raw(path: str, data: bytes) -> RawFile:
    return RawFile(
        path=path, content=data, size=len(data), mtime=1.0, sha256=hashlib.sha256(data).hexdigest()
    )


def routed(r: RawFile) -> list[DocumentEvent]:
    return route_read(r, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=NOW, raw_offset=7)[0]


def example_files() -> list[RawFile]:
    return [raw(p.relative_to(EXAMPLES).as_posix(), p.read_bytes()) for p in sorted(EXAMPLES.rglob("*.md"))]


def rows(records: list[tuple[bytes, bytes]]) -> list[DocumentEvent]:
    return [to_event(row) for _, v in records for row in decode_rows(v)]


def test_every_example_note_comes_back_equal_from_its_one_record() -> None:
    files = example_files()
    assert len(files) > 5
    for r in files:
        events = routed(r)
        records = encode_events(events, {})
        assert len(records) == (1 if events else 0)
        assert [k for k, _ in records] == [e.key.encode() for e in events[:1]]
        assert rows(records) == events


@pytest.mark.parametrize("count", [2, 3, 5])
def test_a_note_has_one_record_per_partition_its_axes_live_on_keyed_to_land_there(count: int) -> None:
    partitions = {a.name: key_partition(a.name, count) for a in DEFAULT_AXES}
    for r in example_files():
        events = routed(r)
        records = encode_events(events, partitions)
        assert len(records) == len({partitions[e.key] for e in events})
        for key, value in records:
            # The producer's default partitioner puts the record where each axis it holds lives.
            assert {partitions[row.header.axis or ""] for row in decode_rows(value)} == {
                key_partition(key.decode(), count)
            }
        assert sorted(rows(records), key=lambda e: e.key) == sorted(events, key=lambda e: e.key)


def test_the_text_travels_once_in_one_record_for_every_axis() -> None:
    body = "# vLLM 推理 KV cache GPU cluster security agent\n\n## §1 一\n" + "推理加速。" * 400
    events = routed(raw("inbox/jay/2026-09-27-1000-a.md", body.encode()))
    assert len(events) == 4
    records = encode_events(events, {})
    text = ("推理加速。" * 400).encode()
    assert len(records) == 1 and records[0][1].startswith(MAGIC + b"\n")
    assert records[0][1].count(text) == 1  # v1 carried it twice per axis: whole and in its section
    assert events[0].model_dump_json().encode().count(text) == 2
    assert [row.header.axis for row in decode_rows(records[0][1])] == [e.axis for e in events]


def test_v3_v2_and_v1_records_on_retained_topics_stay_readable() -> None:
    for r in example_files()[:5]:
        events = routed(r)
        v3 = encode_v3(events, {})
        assert all(v.startswith(MAGIC_V3 + b"\n") for _, v in v3)
        assert rows(v3) == events
        # Worked out where decoded (and checked there), as the parse stage works them out for v4.
        for row in (row for _, v in v3 for row in decode_rows(v)):
            assert row.facts == (None if row.stored is None else source_facts(row.stored.summary_json))
        v2 = encode_v2(events)
        assert all(v.startswith(MAGIC_V2 + b"\n") for _, v in v2)
        assert rows(v2) == events
        for event in events:
            assert [to_event(row) for row in decode_rows(event.model_dump_json().encode())] == [event]


def test_a_record_carries_the_facts_the_window_stage_would_work_out_from_its_summary() -> None:
    for r in example_files():
        for _, value in encode_events(routed(r), {}):
            for row in decode_rows(value):
                if row.header.type == "document":
                    assert row.stored is not None
                    assert row.facts == source_facts(row.stored.summary_json)
                else:
                    assert row.facts is None


def _note_record() -> tuple[list[bytes], list[object]]:
    """A real note's record split into its lines, and its facts as JSON values."""
    (_, value), *_ = encode_events(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM.\n")), {}
    )
    lines = value.split(b"\n", 4)
    return lines, json.loads(lines[3])


def _with_facts(facts: bytes) -> bytes:
    lines, _ = _note_record()
    lines[3] = facts
    return b"\n".join(lines)


def test_a_record_with_its_own_facts_reads() -> None:
    _, facts = _note_record()
    assert decode_rows(_with_facts(json.dumps(facts).encode()))


@pytest.mark.parametrize("facts", [b"", b"{}", b"[1,2]"])
def test_a_record_whose_facts_are_not_a_facts_list_raises_value_error(facts: bytes) -> None:
    with pytest.raises(ValueError):
        decode_rows(_with_facts(facts))


@pytest.mark.parametrize(
    ("index", "wrong"),
    [
        (0, "s"),  # the slim summary not a summary
        (6, [[1]]),
        (7, 1),
        # Typed wrong, each would fail the stored batch (and stop the worker) or store nonsense if let through.
        (3, None),
        (3, 2**31),  # a length beyond the INTEGER it is stored as
        (4, "yes"),
        (5, "2101.00001"),
        (7, '"x"'),
        (7, '{"kv":"many"}'),
        (8, "[-1]"),
        (8, "[1, 2"),  # DuckDB's ::JSON cast would fail the whole batch
    ],
)
def test_a_record_whose_facts_do_not_read_raises_value_error(index: int, wrong: object) -> None:
    _, facts = _note_record()
    facts[index] = wrong
    with pytest.raises(ValueError):
        decode_rows(_with_facts(json.dumps(facts).encode()))


@pytest.mark.parametrize(
    ("terms", "signature"),
    [
        (
            '{"kv":2147483648}',
            "null",
        ),  # beyond the INTEGER it is stored as: the store would fail the whole batch
        ('{"kv":1.0}', "null"),
        ('{"kv":1', "null"),
        # A term twice: stored twice, a briefing would count the note twice in the term's document frequency.
        ('{"kv":1,"kv":2}', "null"),
        ('{"caf\\u00e9":1,"café":2}', "null"),
        ("[1]", "null"),
        ("null", "[18446744073709551616]"),
        ("null", "[1,-2]"),
        ("null", "{}"),
    ],
)
def test_a_record_whose_term_counts_or_signature_the_store_cannot_read_raises_value_error(
    terms: str, signature: str
) -> None:
    (_, value), *_ = encode_events(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM.\n")), {}
    )
    magic, header, summary, facts, body = value.split(b"\n", 4)
    row = json.loads(facts)
    assert decode_rows(value)
    row[7:9] = [terms, signature]
    with pytest.raises(ValueError, match="source facts"):
        decode_rows(b"\n".join([magic, header, summary, json.dumps(row).encode(), body]))


def test_a_note_whose_term_counts_name_a_term_twice_is_set_apart_alone() -> None:
    (key, value), *_ = encode_events(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM.\n")), {}
    )
    magic, header, summary, facts, body = value.split(b"\n", 4)
    row = json.loads(facts)
    row[7] = '{"kv":1,"cache":2,"kv":3}'
    twice = b"\n".join([magic, header, summary, json.dumps(row).encode(), body])
    [(_, record)] = pack_notes([(key, value), (key, twice), (key, value)], {}, 1 << 20)
    notes = decode_notes(record)
    assert [(f.index, f.value) for f in notes.failed] == [(1, twice)]
    assert len(notes.rows) == 2 * len(decode_rows(value))


def _v3_with_terms(counts: object, length: object = 8) -> bytes:
    """A v3 record of a real note whose summary's term counts are all `counts`, as an older writer may hold."""
    (_, value), *_ = encode_v3(routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM kv.\n")), {})
    magic, header, summary, body = value.split(b"\n", 3)
    data = json.loads(summary)
    data["terms"] = dict.fromkeys(data["terms"], counts)
    data["length"] = length
    return b"\n".join([magic, header, json.dumps(data).encode(), body])


@pytest.mark.parametrize(
    ("counts", "length"),
    [(1.0, 8), ("3", 8), (True, 8), (2**31, 8), ("3", 0), (1, "8"), (1, 8.0), (1, 2**31)],
)
def test_a_v3_record_whose_term_counts_the_store_cannot_read_raises_value_error(
    counts: object, length: object
) -> None:
    # The summary reads (pydantic's lax int takes 1.0, "3" and true) and was stored as written: the store's read
    # of its term counts or length failed the window's whole batch, replayed at every restart.
    assert decode_rows(_v3_with_terms(1))
    with pytest.raises(ValueError, match="source facts"):
        decode_rows(_v3_with_terms(counts, length))


@pytest.mark.parametrize(
    "change",
    [{"field_of_a_newer_writer": 1}, {"title": None}, {"event_time": "yesterday"}],
)
def test_a_record_whose_summary_no_briefing_could_read_raises_value_error(change: dict[str, object]) -> None:
    (_, value), *_ = encode_events(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM.\n")), {}
    )
    magic, header, summary, facts, body = value.split(b"\n", 4)
    row = json.loads(facts)
    row[0] = json.dumps(json.loads(row[0]) | change)  # the slim summary every briefing of the axis reads
    with pytest.raises(ValueError):
        decode_rows(b"\n".join([magic, header, summary, json.dumps(row).encode(), body]))


def test_sections_not_sliced_from_the_text_are_kept_whole() -> None:
    doc = parse_document(
        raw("inbox/jay/2026-09-27-1000-crlf.md", b"# t\r\nline one\r\nline two\r\n## s\r\nx\r\n"), zone=SH
    )
    stored = store_document(doc)
    assert load_document(stored) == doc
    assert load_summary(stored.summary_json) == doc.summary()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab #§1.\n\r\t`~-推理\u2028")), max_size=300))
def test_any_text_comes_back_equal(text: str) -> None:
    doc = parse_document(raw("inbox/jay/2026-09-27-1000-x.md", text.encode()), zone=SH)
    assert load_document(store_document(doc)) == doc


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list('ab #\n\r\t"\\/推理\u2028\x01\x1f\x7f😀')), max_size=200),
    st.sampled_from(["", 'x: "\\u0001 推理"\n', "n: 1.5e300\nd: 2026-09-27\nl: [1, -0.0, .inf]\n"]),
)
def test_a_document_is_stored_as_the_same_json_as_before(text: str, front: str) -> None:
    # The summary and the body as model_dump_json and json.dumps wrote them: records of this version and of
    # the ones before are the same bytes, and every reader reads them alike.
    data = (f"---\n{front}---\n" if front else "") + text
    doc = parse_document(raw("inbox/jay/2026-09-27-1000-x.md", data.encode()), zone=SH)
    stored = store_document(doc)
    assert stored.summary_json == doc.summary().model_dump_json()
    body = json.loads(stored.body_json)
    assert stored.body_json == json.dumps(body, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list('ab #\n\t"\\§1.推理\u3000')), max_size=200),
    st.sampled_from(
        [
            "",
            "primary: x\nn: .nan\ncard: [1, .inf]\nanchors: a\n",
            "tags: [a, b]\nd: 2026-09-27\n",
            # Quotes, backslashes and control characters in the slim summary the facts carry as a string.
            'title: "t \\"q\\" \\\\ \\u0001"\nprimary: "p \\"q\\" \\\\n \\t 推理"\nanchors: ["\\\\", "\\""]\n',
        ]
    ),
)
def test_a_record_s_header_and_facts_are_its_models_json(text: str, front: str) -> None:
    # Written from the values, neither model built nor the summary read back: the bytes the models write.
    data = (f"---\n{front}---\n" if front else "") + text
    for _, value in encode_events(routed(raw("inbox/jay/2026-09-27-1000-x.md", data.encode())), {}):
        _, header, *document = value.split(b"\n", 4)  # a blank note's rejection: a header alone
        assert header == GroupHeader.model_validate_json(header).model_dump_json().encode()
        if document:
            summary, facts, _ = document
            assert facts == dump_facts(source_facts(summary)).encode()


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"garbage",
        MAGIC,
        MAGIC + b"\n{}",
        MAGIC + b'\n{"type":"deletion","path":"a","sha256":"s","seen_at":"2026-09-27T00:00:00Z"}',
        MAGIC
        + b'\n{"type":"document","path":"a","sha256":"s","seen_at":"2026-09-27T00:00:00Z","axes":["inference"]}',
        MAGIC_V2,
        MAGIC_V2 + b'\n{"type":"document","path":"a","sha256":"s","seen_at":"2026-09-27T00:00:00Z"}',
        b"predigest.documents/v9\n{}",
    ],
)
def test_unreadable_records_raise_value_error(value: bytes) -> None:
    with pytest.raises(ValueError):
        decode_rows(value)


def test_an_older_record_s_summary_no_briefing_could_read_is_refused_when_decoded() -> None:
    # Every briefing of the axis would fail on it; refused here, the agent skips it with an error instead.
    # (A v4 record's summary was validated by the parse stage that wrote it, with its facts.)
    (_, value), *_ = encode_v3(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM serving.\n")), {}
    )
    magic, header, summary, body = value.split(b"\n", 3)
    assert all(row.stored is not None for row in decode_rows(value))
    bad = b"\n".join([magic, header, summary[:-1] + b',"from_the_future":1}', body])
    for _ in range(2):  # its other partitions' records carry the same summary: refused each time
        with pytest.raises(ValueError):
            decode_rows(bad)


def _without_titles(value: bytes) -> bytes:
    """The record as a predigest from before notes kept their stated titles wrote it."""
    magic, header, summary, body = value.split(b"\n", 3)
    data = json.loads(summary)
    del data["titled"]
    return b"\n".join([magic, header, json.dumps(data, ensure_ascii=False).encode(), body])


def test_a_record_written_before_titles_were_kept_gets_them_where_it_is_decoded() -> None:
    text = (
        "# 今日论文\n\n- [FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness]"
        "(https://arxiv.org/abs/2205.14135) 仍是 vLLM 的基础。\n"
    )
    for content, stated in ((text, 1), ("# KV cache\n\nvLLM serving, no paper cited.\n", 0)):
        (event, *_) = routed(raw("inbox/jay/2026-09-27-1000-t.md", content.encode()))
        assert event.document is not None and len(event.document.titled or ()) == stated
        for (_, value), *_ in (encode_v3([event], {}), encode_v2([event])):
            (old,) = decode_rows(_without_titles(value))
            assert old.stored is not None
            # Worked out once here: "none" is () and no briefing reads the note again for them.
            assert load_summary(old.stored.summary_json).titled == event.document.titled
            assert [old] == decode_rows(value)


def test_a_rejection_s_code_and_file_time_travel_in_its_record_for_every_axis() -> None:
    events = routed(raw("inbox/jay/2026-09-20-0930-bin.md", b"# x\x00"))
    records = encode_events(events, {})
    assert len(records) == 1
    back = [row.header for _, v in records for row in decode_rows(v)]
    assert [h.axis for h in back] == [a.name for a in DEFAULT_AXES]
    assert {(h.type, h.reason_code, h.event_time) for h in back} == {
        ("rejection", "binary", datetime(2026, 9, 20, 9, 30, tzinfo=SH))
    }


def test_a_deletion_is_one_record_per_partition_naming_its_axes() -> None:
    gone = RawFile(
        path="inbox/jay/2026-09-20-0930-x.md", content=b"", size=0, mtime=1.0, sha256="", deleted=True
    )
    events = routed(gone)
    partitions = {a.name: i % 2 for i, a in enumerate(DEFAULT_AXES)}
    records = encode_events(events, partitions)
    assert len(records) == 2
    assert sorted(rows(records), key=lambda e: e.key) == sorted(events, key=lambda e: e.key)
    assert {row.header.type for _, v in records for row in decode_rows(v)} == {"deletion"}


@pytest.mark.parametrize("at", [0, 5])  # its n, its rank: INTEGER columns of source_titles
def test_a_record_whose_stated_title_is_beyond_integer_raises_value_error(at: int) -> None:
    card = b"# Efficient Long-Context LLM Inference via KV Cache Clustering\n\narXiv:2506.11418\n"
    (_, value), *_ = encode_events(routed(raw("paper_cards/2106-2506-11418.md", card)), {})
    magic, header, summary, facts, body = value.split(b"\n", 4)
    row = json.loads(facts)
    assert decode_rows(value) and row[6]
    row[6][0][at] = 2**31  # the store failed the window's whole batch on it
    with pytest.raises(ValueError, match="source facts"):
        decode_rows(b"\n".join([magic, header, summary, json.dumps(row).encode(), body]))
