"""The one token pass over a note: CJK character bigrams and other letter/digit runs as words.

Exact-duplicate hashing, MinHash shingles and relevance index terms all start from the same NFKC,
lower-cased text and the same tokens, so a note is normalised and tokenised once.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

# Kana and Hangul count as CJK too: none of them put spaces between words.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff"
_CJK_RUN = re.compile(f"[{CJK}]+")
# A URL ends at white space, brackets, quotes or the first CJK character ("…/rStar上提供" is not a path).
URL_CHAR = rf"[^\s<>()\[\]\"'|`，。；：、（）{CJK}]"
URL_TRAILING = ".,;:!?*_~"  # punctuation after a URL, not part of it
_WORD = re.compile(rf"[^\W_{CJK}]+")  # letters and digits, CJK excluded
URL = re.compile(r"https?://\S+")  # left out of a text's terms
_TERM = re.compile(rf"([{CJK}]+)|([^\W_{CJK}]+)")  # a CJK run, or a word

_STOPWORD_TEXT = """a an and are as at be by for from has have in into is it its of on or that the this to was were
    will with we our you your not but can may via per vs than then also more most over under new use used
    using which what when where who how all any each other such only one two three http https www com org
    html abs pdf md"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
INDEX_TERMS = 48  # index terms kept per note: enough to rank it, small enough for 100k notes in memory


def normalise(text: str) -> str:
    """NFKC and lower case: the form every token is taken from."""
    return unicodedata.normalize("NFKC", text).lower()


def token_counts(norm: str) -> Counter[str]:
    """Words and CJK character bigrams (a lone CJK character stands for itself) of normalised text."""
    counts: Counter[str] = Counter(_WORD.findall(norm))
    for run in _CJK_RUN.findall(norm):
        # map(operator.add, …) pairs neighbouring characters in C; a Python loop here costs a third of parsing.
        counts.update(map(operator.add, run[:-1], run[1:]) if len(run) > 1 else (run,))
    return counts


def is_index_term(token: str) -> bool:
    """Stopwords, bare numbers and single Latin letters say nothing about a topic."""
    return not (token in STOPWORDS or token.isdigit() or (len(token) == 1 and token.isascii()))


def index_terms(counts: Mapping[str, int], top: int = INDEX_TERMS) -> dict[str, int]:
    """The `top` most frequent index terms (ties broken by term, so the choice is reproducible)."""
    kept = [(t, c) for t, c in counts.items() if is_index_term(t)]
    kept.sort(key=lambda tc: (-tc[1], tc[0]))
    return dict(kept[:top])


def terms(text: str) -> list[str]:
    """Index terms of a short text (a keyword, a title), URLs left out, in order of appearance."""
    norm = normalise(URL.sub(" ", text) if "://" in text else text)
    out: list[str] = []
    for run, word in _TERM.findall(norm):
        if run:
            out.extend([run] if len(run) < 2 else map(operator.add, run[:-1], run[1:]))
        elif word not in STOPWORDS and not word.isdigit() and (len(word) != 1 or not word.isascii()):
            out.append(word)  # `is_index_term`, inline: placement asks it of every word of every point
    return out


def axis_terms(keywords: Iterable[str], name: str) -> tuple[str, ...]:
    """The index terms of an axis's keywords, and of its name when that is one term (`inference`, not
    `llm-infra`, whose parts `llm` and `infra` would match any note about LLMs)."""
    name_terms = terms(name)
    found = [t for k in keywords for t in terms(k)] + (name_terms if len(name_terms) == 1 else [])
    return tuple(dict.fromkeys(found))


def note_index(body_counts: Mapping[str, int], title: str) -> Counter[str]:
    """A note's token counts for relevance: its body's, plus its title's twice (the title says what it is about)."""
    index = Counter(body_counts)
    index.update({t: 2 * c for t, c in token_counts(normalise(title)).items()})
    return index


def note_terms(index: Mapping[str, int], keep: Iterable[str]) -> dict[str, int]:
    """The terms a note keeps for relevance: its most frequent index terms, and every `keep` term it has."""
    return index_terms(index) | {t: index[t] for t in keep if t in index}


class TermParts(NamedTuple):
    """A text's index-term counts, its words and its CJK bigrams apart, each in order of first appearance
    (`processors.terms.read_terms` counts them)."""

    words: dict[str, int]
    cjk: dict[str, int]


def merge_terms(parts: Iterable[TermParts]) -> Counter[str]:
    """`term_counts` of the texts joined by newlines, from each text's parts."""
    # No token, URL or NFKC composition crosses a line break, so the joined text's counts are the sum of its
    # texts'; summed in the order a single pass finds them (words first, then CJK bigrams), the TF-IDF vectors
    # built from them are the same to the last bit.
    parts = list(parts)
    if len(parts) == 1:
        return Counter({**parts[0].words, **parts[0].cjk})
    words: dict[str, int] = {}
    cjk: dict[str, int] = {}
    for p in parts:
        for t, c in p.words.items():
            words[t] = words.get(t, 0) + c
        for t, c in p.cjk.items():
            cjk[t] = cjk.get(t, 0) + c
    return Counter({**words, **cjk})
