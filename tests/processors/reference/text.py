"""The reference of a note's exact-duplicate hash: sha256 of its normalised text with Markdown noise removed;
and of a text's index-term counts, words and CJK bigrams apart.

The product computes them in the compiled pass (`processors.structure.read_note(body).text_hash`,
`processors.terms.read_terms`).
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections import Counter
from itertools import chain

from processors.tokens import _CJK_RUN, _WORD, STOPWORDS, URL, TermParts, normalise

# Markdown markup that does not change what a note says: emphasis, code ticks, headings, quotes, tables.
# A bullet's indent is white space within its line: `^\s*` ran over every following blank line from each one
# (80,000 blank lines hung the parse), and whitespace is collapsed afterwards anyway.
_NOISE_RE = re.compile(r"[*_`#>|~\[\]]+|-{3,}|={3,}|^[^\S\n]*[-+]\s+", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")


def strip_markup(norm: str) -> str:
    """Markdown noise removed and whitespace collapsed, from text already NFKC-normalised and lower-cased."""
    return _SPACE_RE.sub(" ", _NOISE_RE.sub(" ", norm)).strip()


def normalise_text(text: str) -> str:
    """NFKC, lowercase, markdown noise removed, whitespace collapsed."""
    return strip_markup(normalise(text))


def hash_normalised(norm: str) -> str:
    """sha256 hex digest of already normalised text, after `strip_markup`."""
    return hashlib.sha256(strip_markup(norm).encode("utf-8", errors="replace")).hexdigest()


def text_hash(text: str) -> str:
    """sha256 hex digest of the normalised text."""
    return hash_normalised(normalise(text))


def term_parts(text: str) -> TermParts:
    """Index-term counts of a text (URLs left out), words and CJK bigrams apart, each in order of first
    appearance: the Python the briefing counted them with before `processors.terms`."""
    norm = normalise(URL.sub(" ", text) if "://" in text else text)
    words = Counter(_WORD.findall(norm))
    runs = _CJK_RUN.findall(norm)
    cjk = Counter(chain.from_iterable(map(operator.add, r[:-1], r[1:]) if len(r) > 1 else (r,) for r in runs))
    kept = {
        t: c
        for t, c in words.items()
        if t not in STOPWORDS and not t.isdigit() and (len(t) != 1 or not t.isascii())
    }
    return TermParts(kept, dict(cjk))
