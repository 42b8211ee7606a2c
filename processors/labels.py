"""Low-cardinality metric labels derived from paths and briefings (pure, no I/O)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from processors.models import Document, SourceEntry

NO_WRITER = "none"
OTHER_WRITER = "other"
# A writer is an inbox folder name; anything unusual is folded so a stray folder cannot explode the series.
_WRITER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


def writer_label(path: str) -> str:
    """The writer of a root-relative path: `inbox/<writer>/…` gives `<writer>`, anything else `none`."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "inbox":
        return NO_WRITER
    return parts[1].lower() if _WRITER_RE.match(parts[1]) else OTHER_WRITER


def duplicate_kinds(sources: Iterable[SourceEntry], documents: Iterable[Document]) -> Counter[str]:
    """How many sources a briefing marked duplicate, by kind: `exact` (same normalised text) or `near`."""
    text_hash = {d.path: d.text_hash for d in documents}
    kinds: Counter[str] = Counter()
    for s in sources:
        if s.status != "duplicate":
            continue
        same = s.duplicate_of is not None and text_hash.get(s.path) == text_hash.get(s.duplicate_of)
        kinds["exact" if same else "near"] += 1
    return kinds
