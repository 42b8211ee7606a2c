"""A note's topic line: its headings unnumbered, as the numbering pattern reads them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.source_facts import _NUMBERING, heading_topic

# Leads the pattern may take for a number or a space (Unicode digits and spaces), and ones it must not.
_HEADING = st.text(alphabet=st.sampled_from(list("1٣²§ .、)\u3000\u00a0\tab推")), max_size=12)


@settings(max_examples=500, deadline=None)
@given(st.lists(_HEADING, max_size=6), st.sampled_from(["", "t", "1 t"]))
def test_a_topic_line_drops_exactly_the_numbers_the_pattern_reads(headings: list[str], title: str) -> None:
    parts = [_NUMBERING.sub("", h).strip() for h in headings if h != title]
    expected = " + ".join(p for p in dict.fromkeys(parts) if p) or title
    assert heading_topic(title, headings) == expected
