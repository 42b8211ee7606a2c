"""A note's body is written with the text's JSON from the compiled extension (predigest_native.json_string), its
summary's signature and term counts likewise (json_ints, json_counts): the very bytes pydantic's JSON wrote, so
documents records stay the same whichever wrote them."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import json_counts, json_ints, json_string

from processors import source_facts
from processors.fan_out import route_read
from processors.models import AxisSpec, Document, RawFile
from processors.source_facts import document_facts
from processors.structure import read_note
from processors.wire import encode_events, store_document

# Every ASCII character (the escaped ones among them), and UTF-8 of two, three and four bytes.
_CHARS = [chr(c) for c in range(0x80)] + list("é推理\u2028\ufeff😀")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(_CHARS), max_size=120))
def test_a_text_s_json_is_pydantic_s(text: str) -> None:
    assert json_string(text) == pydantic_core.to_json(text)


@pytest.mark.parametrize("at", range(70))
def test_each_escape_is_found_at_every_place_in_a_block(at: int) -> None:
    for c in [*range(0x20), ord('"'), ord("\\"), 0x7F]:
        text = "a" * at + chr(c) + "推" * (at % 7) + chr(c)
        assert json_string(text) == pydantic_core.to_json(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from([chr(c) for c in range(0x100)]), max_size=80))
def test_a_latin_1_text_s_json_is_pydantic_s(text: str) -> None:
    # CPython keeps such a text a byte a character, not as UTF-8: json_string encodes it itself.
    assert json_string(text) == pydantic_core.to_json(text)


_INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(_INT64, max_size=140), st.booleans())
def test_a_signature_s_json_is_pydantic_s(values: list[int], as_tuple: bool) -> None:
    signature = tuple(values) if as_tuple else values
    assert json_ints(signature) == pydantic_core.to_json(signature)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(alphabet=st.sampled_from(_CHARS), max_size=12), _INT64, max_size=60))
def test_term_counts_json_is_pydantic_s(counts: dict[str, int]) -> None:
    assert json_counts(counts) == pydantic_core.to_json(counts)


class _Int(int):
    pass


@pytest.mark.parametrize(
    "value",
    [None, [True], [1.0], [2**64], [-(2**63) - 1], [_Int(3)], [1, "2"], {1: 2}, 7],
)
def test_other_signatures_are_left_to_pydantic(value: object) -> None:
    assert json_ints(value) is None


@pytest.mark.parametrize(
    "value",
    [None, {1: 2}, {"a": True}, {"a": 1.0}, {"a": 2**64}, {"a\ud800": 1}, {"a": _Int(1)}, [("a", 1)]],
)
def test_other_term_counts_are_left_to_pydantic(value: object) -> None:
    assert json_counts(value) is None


def test_a_summary_with_other_values_is_written_as_pydantic_writes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = Document.model_validate(
        {"path": "p", "sha256": "s", "writer": None, "kind": "inbox", "event_time": "2026-09-27T10:00:00Z",
         "bytes": 1, "title": "t", "text_hash": "h", "text": "x", "terms": {"推理": 3}, "signature": [2**64 - 1, 0]}
    )  # fmt: skip
    cases = [
        vars(doc),
        vars(doc) | {"signature": (True, 2**70)},
        vars(doc) | {"terms": {"a": True, "b": 2.5}},
    ]
    natively = [document_facts(values) for values in cases]
    monkeypatch.setattr(source_facts, "_NATIVE_JSON", {})
    assert natively == [document_facts(values) for values in cases]


def test_a_lone_surrogate_fails_as_it_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        json_string("a\ud800")
    doc = Document.model_construct(
        **Document.model_validate(
            {"path": "p", "sha256": "s", "writer": None, "kind": "inbox", "event_time": "2026-09-27T10:00:00Z",
             "bytes": 1, "title": "t", "text_hash": "h", "text": "x"}
        ).__dict__ | {"text": "a\ud800"}
    )  # fmt: skip
    with pytest.raises(pydantic_core.PydanticSerializationError):
        store_document(doc)


_AXES = (AxisSpec(name="inference"), AxisSpec(name="risk"))
_SEEN = datetime(2026, 9, 27, 10, tzinfo=UTC)
_NOTE = '---\ntitle: 推理\n---\n# 推理 "x"\n\n'


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(_CHARS), max_size=200),
    st.sampled_from(["utf-8", "utf-8-sig", "gb18030", "utf-16"]),
)
def test_the_text_s_json_the_parse_makes_is_the_text_s(body: str, codec: str) -> None:
    # A record's body is written with the JSON the compiled pass made of the bytes it read: the same record.
    content = (_NOTE + body).encode(codec, errors="replace")
    raw = RawFile(
        path="inbox/w/2026-09-27-1000-a.md", content=content, size=len(content), mtime=0.0, sha256="s"
    )
    events, stored_body = route_read(raw, _AXES, zone=ZoneInfo("UTC"), max_bytes=1 << 20, seen_at=_SEEN)
    doc = events[0].document
    if doc is not None:
        assert stored_body is not None  # decoded bytes hold no lone surrogate
    assert encode_events(events, {}, stored_body) == encode_events(events, {})


def test_a_body_with_a_lone_surrogate_has_no_stored_body() -> None:
    assert read_note("a\ud800 b").stored_body() is None
    assert (
        read_note('a\n"b"').stored_body()
        == b'{"text":' + json_string('a\n"b"') + b',"sections":[[null,"",0,0,5]]}'
    )
