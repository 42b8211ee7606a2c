"""Whether a briefing's Markdown cell needs escaping is read by the compiled extension (predigest_native.
markdown_plain): the answer of the regex it replaced (tests/processors/reference/markdown_plain.py), for every
character and every way CPython holds a string (1, 2 or 4 bytes a character), so that no briefing's bytes change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import markdown_plain

from processors.render_markdown import esc
from tests.processors.reference import markdown_plain as reference

_BELOW = range(0x3100)  # past every character a cell escapes (the last is U+3000)


def test_every_character_alone_is_told_as_the_regex_tells_it() -> None:
    differ = [c for c in range(0x110000) if markdown_plain(chr(c)) != reference.plain(chr(c))]
    assert differ == []


def test_every_character_is_told_alike_in_a_string_of_each_width() -> None:
    for lead in ("a ", "推 ", "😀 "):  # held as 1, 2 and 4 bytes a character (the lead's widest)
        differ = [c for c in _BELOW if markdown_plain(lead + chr(c)) != reference.plain(lead + chr(c))]
        assert differ == [], lead


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from([" ", " ", "a", "|", "推", "\u3000", "\u200b", "😀", "\t", "\x85"])))
def test_a_text_is_plain_as_the_regex_says(text: str) -> None:
    assert markdown_plain(text) == reference.plain(text)


def test_a_cell_with_nothing_to_escape_is_left_as_it_is_and_one_with_something_is_escaped() -> None:
    assert esc("inbox/a.md（10:12 · 6.6KB · 推理）") == "inbox/a.md（10:12 · 6.6KB · 推理）"
    assert esc("a  b | c") == "a b \\| c"
