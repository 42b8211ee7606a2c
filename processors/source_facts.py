"""What a briefing reads of a stored version besides its text, worked out once, when the version is stored.

The state keeps each version's summary (processors.wire). A briefing of a large window must not read and
validate every summary whole: its signature (128 numbers) and term counts are most of it, and what it needs of
them are window figures (duplicate groups, term statistics, counts of the profile terms) that DuckDB computes
from columns and rows. So a stored version also becomes these facts (`sinks.source_rows` writes them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from processors.near_duplicates import NUM_PERM

# Kept as rows and columns instead, or (the headings) as the topic line they make.
_BULK = ("signature", "terms", "headings")
_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")
TOPIC_LIMIT = 90
_SLOT = 1 << 64  # a signature slot is stored as an unsigned 64-bit number


@dataclass(frozen=True)
class SourceFacts:
    """One version's facts: its summary without signature and term counts, and those as rows and columns."""

    summary_json: str  # the summary without `signature`, `terms` and `headings`
    topic: str  # the line its headings make (`heading_topic`): what 一 and 五 say it is about
    text_hash: str
    length: int  # its BM25 length: its tokens, else (an older record) its term counts' sum
    terms: Mapping[str, int]
    signature: tuple[int, ...] | None  # a whole signature (NUM_PERM slots), else None: exact duplicates only
    arxiv_ids: tuple[str, ...]


def heading_topic(title: str, headings: Sequence[str], limit: int = TOPIC_LIMIT) -> str:
    """A note's topic line: its headings but the title, unnumbered, joined; the title when it has none."""
    parts = [_NUMBERING.sub("", h).strip() for h in headings if h != title]
    parts = [p for p in dict.fromkeys(parts) if p]
    text = " + ".join(parts) or title
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _whole(signature: Any) -> tuple[int, ...] | None:
    """The signature when it has NUM_PERM slots of this scheme's range; another scheme's is never compared."""
    if not isinstance(signature, list) or len(signature) != NUM_PERM:
        return None
    if not all(type(v) is int and 0 <= v < _SLOT for v in signature):
        return None
    return tuple(signature)


def source_facts(summary_json: str) -> SourceFacts:
    """The facts of a stored summary (`DocumentSummary` JSON, as `processors.wire` stores it)."""
    data: dict[str, Any] = json.loads(summary_json)
    raw_terms = data.get("terms") or {}
    terms = {str(t): int(n) for t, n in raw_terms.items()} if isinstance(raw_terms, dict) else {}
    slim = {k: v for k, v in data.items() if k not in _BULK}
    title = str(data.get("title", ""))
    return SourceFacts(
        summary_json=json.dumps(slim, ensure_ascii=False, separators=(",", ":")),
        topic=heading_topic(title, [str(h) for h in data.get("headings") or ()]),
        text_hash=str(data.get("text_hash", "")),
        length=int(data.get("length") or 0) or sum(terms.values()),
        terms=terms,
        signature=_whole(data.get("signature")),
        arxiv_ids=tuple(str(i) for i in data.get("arxiv_ids") or ()),
    )
