"""Index terms for relevance and section matching: Latin words plus CJK character bigrams."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

# CJK has no spaces between words; overlapping character bigrams are the usual index unit for it.
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[a-z][a-z0-9]*(?:[-+][a-z0-9]+)*|\d+[a-z]+[a-z0-9]*")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_URL_RE = re.compile(r"https?://\S+")

_STOPWORD_TEXT = """a an and are as at be by for from has have in into is it its of on or that the this to was were
    will with we our you your not but can may via per vs than then also more most over under new use used
    using which what when where who how all any each other such only one two three http https www com org
    html abs pdf md"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def terms(text: str) -> list[str]:
    """Lower-cased words (stopwords and URLs dropped) and CJK bigrams, in order of appearance."""
    text = unicodedata.normalize("NFKC", _URL_RE.sub(" ", text)).lower()
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if _CJK_RUN.fullmatch(tok):
            if len(tok) == 1:
                out.append(tok)
            else:
                out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
        elif len(tok) > 1 and tok not in STOPWORDS:
            out.append(tok)
    return out


def term_counts(text: str) -> Counter[str]:
    """How often each term occurs in `text`."""
    return Counter(terms(text))
