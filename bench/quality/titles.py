"""Is a title the paper's? Normalised comparison: exact after normalisation, or token-set similarity ≥ 0.9.

Normalisation folds case, punctuation, whitespace and line breaks; CJK text is compared character by
character. A venue (`OSDI 2024`), an author list or a cut fragment is not the title; an id alone is absent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Literal

Verdict = Literal["correct", "wrong", "absent"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
# A CJK character is a token of its own; other runs of letters and digits are words.
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_ID = re.compile(r"\d{4}\.\d{4,5}(?:v\d+)?")
_ID_NOISE = frozenset({"arxiv", "abs", "pdf", "id"})
THRESHOLD = 0.9


def norm(text: str) -> str:
    """Lower case, punctuation and markup removed, whitespace (line breaks included) collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_WORD.findall(text.replace("$\\times$", "×")))


def tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def similarity(a: str, b: str) -> float:
    """Token-set (Jaccard) similarity of two titles."""
    ta, tb = tokens(a), tokens(b)
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


def similar(a: str, b: str, threshold: float = THRESHOLD) -> bool:
    return norm(a) == norm(b) or similarity(a, b) >= threshold


def is_absent(title: str) -> bool:
    """No title at all: empty, or nothing but ids and the word arXiv."""
    rest = _ID.sub(" ", title)
    return not [t for t in tokens(rest) if t not in _ID_NOISE]


def judge(title: str, truths: Iterable[str]) -> Verdict:
    """`correct` if the title is one of the paper's accepted titles, `absent` if there is none, else `wrong`."""
    if is_absent(title):
        return "absent"
    return "correct" if any(similar(title, t) for t in truths) else "wrong"
