"""A text's index-term counts, read by the compiled pass (predigest_native): what the briefing vectorises.

`read_terms` is what `processors.tokens` defines (NFKC and lower case, URLs left out, words and CJK bigrams,
stopwords, numbers and lone Latin letters dropped), in one pass over the text that also hands back the text
normalised: a unit's text is weighed by its keywords read whole from that (`relevance.AxisSpace`) and not
normalised again. tests/processors/test_native_equality.py holds it equal to its Python reference.
"""

from __future__ import annotations

from collections import Counter

from processors.structure import READER
from processors.tokens import URL, TermParts, merge_terms


def read_terms(text: str) -> tuple[TermParts, str | None]:
    """(the text's index-term counts, words and CJK bigrams apart, each in order of first appearance; the text
    normalised, `tokens.normalise(text)`, or None when it holds a URL or a lone surrogate)."""
    has_url = "://" in text
    words, cjk, norm = READER.term_parts(URL.sub(" ", text) if has_url else text)
    return TermParts(words, cjk), None if has_url else norm


def term_parts(text: str) -> TermParts:
    """Index-term counts of a text (URLs left out), words and CJK bigrams apart: see `tokens.merge_terms`."""
    return read_terms(text)[0]


def term_counts(text: str) -> Counter[str]:
    """Index-term counts of a text (URLs left out)."""
    return merge_terms([term_parts(text)])
