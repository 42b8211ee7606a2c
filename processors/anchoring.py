"""What the axis already cites (living document, earlier briefings, its baseline) and the window's ids split by it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from processors.arxiv_ids import MAX_LISTED_IDS_PER_NOTE
from processors.living_doc import LivingDoc, parse_living_doc
from processors.models import Document, DocumentSummary, Relevance


@dataclass(frozen=True)
class Anchors:
    """The parsed living document, the ids anchored for the axis, and the axis's own baselines in the window."""

    living: LivingDoc | None
    ids: frozenset[str]
    baselines: list[DocumentSummary]


def anchor_ids(
    kept: Sequence[DocumentSummary],
    rel: Mapping[str, Relevance],
    living: Document | None,
    earlier_cited: Collection[str],
) -> Anchors:
    """Ids the living document, earlier briefings or this axis's own baseline note cite."""
    living_doc = parse_living_doc(living) if living is not None else None
    anchored = set(earlier_cited) | (set(living_doc.cited_ids) if living_doc else set())
    baselines = [d for d in kept if rel[d.path].code == "baseline"]
    for d in baselines:
        anchored.update(d.arxiv_ids)
    return Anchors(living=living_doc, ids=frozenset(anchored), baselines=baselines)


@dataclass(frozen=True)
class IdSplit:
    """Every id of the window in order of first appearance, split into new and continued."""

    window: list[str]
    new: list[str]
    continued: list[str]


def _listed(doc: DocumentSummary) -> Sequence[str]:
    return doc.arxiv_ids if doc.kind == "baseline" else doc.arxiv_ids[:MAX_LISTED_IDS_PER_NOTE]


def split_ids(docs: Iterable[DocumentSummary], anchored: Collection[str]) -> IdSplit:
    """The ids the documents cite, new unless anchored; a note's first MAX_LISTED_IDS_PER_NOTE only (a baseline's all:
    it is an earlier briefing, bounded the same way)."""
    window = list(dict.fromkeys(i for d in docs for i in _listed(d)))
    return IdSplit(
        window=window,
        new=[i for i in window if i not in anchored],
        continued=[i for i in window if i in anchored],
    )
