"""Decide which configured axes a document belongs to."""

from __future__ import annotations

import re
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
    for axis in axes:
        if axis.name not in wanted and keyword_hits(doc, axis) > 0:
            wanted.add(axis.name)
    return [a.name for a in axes if a.name in wanted]
