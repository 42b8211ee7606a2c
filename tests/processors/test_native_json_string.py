"""A note's body is written with the text's JSON from the compiled extension (predigest_native.json_string): the
very bytes pydantic's JSON wrote, so documents records stay the same whichever wrote them."""

from __future__ import annotations

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import json_string

from processors.models import Document
from processors.wire import store_document

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
