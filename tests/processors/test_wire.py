"""The documents topic's v2 records: the text once, events back equal, v1 records still readable."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.documents import parse_document
from processors.fan_out import DocumentEvent, route_raw
from processors.models import RawFile
from processors.wire import (
    MAGIC,
    decode,
    encode_events,
    load_document,
    load_summary,
    store_document,
)
from streams.settings import DEFAULT_AXES
from tests.state_support import to_event

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "root"


def raw(path: str, data: bytes) -> RawFile:
    return RawFile(
        path=path, content=data, size=len(data), mtime=1.0, sha256=hashlib.sha256(data).hexdigest()
    )


def routed(r: RawFile) -> list[DocumentEvent]:
    return route_raw(r, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=NOW, raw_offset=7)


def example_files() -> list[RawFile]:
    return [raw(p.relative_to(EXAMPLES).as_posix(), p.read_bytes()) for p in sorted(EXAMPLES.rglob("*.md"))]


def test_every_example_note_comes_back_equal_from_its_records() -> None:
    files = example_files()
    assert len(files) > 5
    for r in files:
        events = routed(r)
        records = encode_events(events)
        assert [k for k, _ in records] == [e.key.encode() for e in events]
        assert [to_event(decode(v)) for _, v in records] == events


def test_the_text_travels_once_and_a_note_is_encoded_once_for_its_axes() -> None:
    body = "# vLLM 推理 KV cache GPU cluster security agent\n\n## §1 一\n" + "推理加速。" * 400
    events = routed(raw("inbox/jay/2026-09-27-1000-a.md", body.encode()))
    assert len(events) == 4
    records = encode_events(events)
    text = ("推理加速。" * 400).encode()
    assert records[0][1].count(text) == 1  # v1 carried it twice: whole and in its section
    assert events[0].model_dump_json().encode().count(text) == 2
    assert len({v.split(b"\n", 2)[2] for _, v in records}) == 1
    assert all(v.startswith(MAGIC + b"\n") for _, v in records)


def test_v1_records_on_retained_topics_stay_readable() -> None:
    for r in example_files()[:5]:
        for event in routed(r):
            assert to_event(decode(event.model_dump_json().encode())) == event


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


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"garbage",
        MAGIC,
        MAGIC + b"\n{}",
        MAGIC + b'\n{"type":"document","path":"a","sha256":"s","seen_at":"2026-09-27T00:00:00Z"}',
    ],
)
def test_unreadable_records_raise_value_error(value: bytes) -> None:
    with pytest.raises(ValueError):
        decode(value)


def test_a_summary_no_briefing_could_read_is_refused_when_decoded() -> None:
    # Every briefing of the axis would fail on it; refused here, the agent skips it with an error instead.
    (_, value), *_ = encode_events(
        routed(raw("inbox/jay/2026-09-27-1000-x.md", b"# KV cache\n\nvLLM serving.\n"))
    )
    magic, header, summary, body = value.split(b"\n", 3)
    assert decode(value).stored is not None
    bad = b"\n".join([magic, header, summary[:-1] + b',"from_the_future":1}', body])
    for _ in range(2):  # its other axes' records carry the same summary: refused each time, not remembered
        with pytest.raises(ValueError):
            decode(bad)


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
        ((_, value), *_) = encode_events([event])
        assert event.document is not None and len(event.document.titled or ()) == stated
        old = decode(_without_titles(value))
        assert old.stored is not None
        # Worked out once here: "none" is () and no briefing reads the note again for them.
        assert load_summary(old.stored.summary_json).titled == event.document.titled
        assert old == decode(value)


def test_a_rejection_s_code_and_file_time_travel_in_its_record() -> None:
    events = routed(raw("inbox/jay/2026-09-20-0930-bin.md", b"# x\x00"))
    back = [decode(v).header for _, v in encode_events(events)]
    assert {(h.type, h.reason_code, h.event_time) for h in back} == {
        ("rejection", "binary", datetime(2026, 9, 20, 9, 30, tzinfo=SH))
    }
