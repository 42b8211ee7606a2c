"""Decide which configured axes a document belongs to."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from processors.models import AxisSpec, Document


@lru_cache(maxsize=1024)
def _keyword_re(keyword: str) -> re.Pattern[str]:
    # ASCII keywords need word boundaries ("kv" must not hit "kvetch"); CJK has no spaces, so substring.
    escaped = re.escape(keyword)
    if keyword.isascii():
        return re.compile(rf"(?<![0-9A-Za-z]){escaped}(?![0-9A-Za-z])", re.IGNORECASE)
    return re.compile(escaped, re.IGNORECASE)


# The only characters IGNORECASE folds onto an ASCII letter other than through str.lower() (İ ı ſ K, found by
# trying every code point): a text without them gives the same matches lower-cased, where the search is
# a plain literal scan instead of IGNORECASE's character-by-character one (~10x faster on Chinese notes).
_ODD_FOLDS = "\u0130\u0131\u017f\u212a"


@lru_cache(maxsize=1024)
def _lowered_re(keyword: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9a-z]){re.escape(keyword.lower())}(?![0-9a-z])")


@lru_cache(maxsize=1024)
def _uncased(keyword: str) -> bool:
    # Letters of no case (CJK, kana …): IGNORECASE changes nothing, a substring test is the same match.
    return all(unicodedata.category(ch) == "Lo" for ch in keyword)


def _occurs(keyword: str, haystack: str, lowered: str | None) -> bool:
    """Whether `_keyword_re(keyword)` matches the haystack; `lowered` is its lower case, None if it has odd folds."""
    if _uncased(keyword):
        return keyword in haystack
    if lowered is not None and keyword.isascii():
        # The substring test rules most keywords out at memchr speed; the pattern checks the word boundaries.
        return keyword.lower() in lowered and _lowered_re(keyword).search(lowered) is not None
    return _keyword_re(keyword).search(haystack) is not None


def keyword_hits(doc: Document, axis: AxisSpec) -> int:
    """How many times the axis keywords occur in the document's title and text."""
    haystack = f"{doc.title}\n{doc.text}"
    return sum(len(_keyword_re(k).findall(haystack)) for k in axis.keywords if k.strip())


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def _card_axes(doc: Document) -> set[str]:
    found: set[str] = set()
    primary = doc.front_matter.get("primary")
    if isinstance(primary, str):
        found.add(primary.strip())
    anchors = doc.front_matter.get("anchors")
    if isinstance(anchors, dict):
        found.update(str(k).strip() for k in anchors)
    elif isinstance(anchors, list):
        for item in anchors:
            if isinstance(item, dict):
                found.update(str(k).strip() for k in item)
            elif isinstance(item, str):
                found.add(item.split(":", 1)[0].strip())
    return found


def assign_axes(doc: Document, axes: Sequence[AxisSpec]) -> list[str]:
    """Names of the configured axes this document belongs to, in configuration order."""
    if doc.kind == "work_queue":
        return [a.name for a in axes]
    if doc.kind == "living":
        stem = _stem(doc.path)
        own = [a.name for a in axes if a.living_doc == doc.path]
        return own or [a.name for a in axes if a.name == stem][:1]
    wanted: set[str] = set(doc.axes)
    if doc.kind == "baseline" and doc.baseline_axis:
        wanted.add(doc.baseline_axis)
    if doc.kind == "paper_card":
        wanted |= _card_axes(doc)
    haystack = f"{doc.title}\n{doc.text}"
    lowered = None if any(ch in haystack for ch in _ODD_FOLDS) else haystack.lower()
    for axis in axes:
        if axis.name not in wanted and any(_occurs(k, haystack, lowered) for k in axis.keywords if k.strip()):
            wanted.add(axis.name)
    return [a.name for a in axes if a.name in wanted]
