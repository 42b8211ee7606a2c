"""A briefing's JSON made a slice of its lists at a time is, joined, the JSON pydantic makes of it whole."""

from __future__ import annotations

import pytest

from sinks import briefing_json
from sinks.briefing_json import json_pieces
from tests.processors.notes import brief, example_documents


@pytest.mark.parametrize("slice_", [1, 2, 1000])
def test_the_json_made_in_slices_is_the_json_made_whole(slice_: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The example root's briefing: floats, CJK, escapes, empty and nested lists, lists longer than a slice.
    b = brief(example_documents())
    assert len(b.sources) > 2 and len(b.no_increment_sources) > 2
    monkeypatch.setattr(briefing_json, "SLICE", slice_)
    whole = b.__pydantic_serializer__.to_json(b, by_alias=True)
    assert b"".join(json_pieces(b)) == whole
