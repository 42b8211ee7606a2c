"""What the axis already cites (living document, earlier briefings, its baseline) and the window's ids split by it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from processors.arxiv_ids import MAX_LISTED_IDS_PER_NOTE
from processors.living_doc import LivingDoc, parse_living_doc
from processors.models import Document, DocumentSummary


@dataclass(frozen=True)
class Anchors:
    """The parsed living document, the ids anchored for the axis, and the axis's own baselines in the window."""

    living: LivingDoc | None
    ids: frozenset[str]
    baselines: list[DocumentSummary]


def anchor_ids(
    baselines: Sequence[DocumentSummary], living: Document | None, earlier_cited: Collection[str]
) -> Anchors:
    """Ids the living document, earlier briefings or this axis's own baseline notes (kept, in the window) cite."""
    living_doc = parse_living_doc(living) if living is not None else None
    anchored = set(earlier_cited) | (set(living_doc.cited_ids) if living_doc else set())
    for d in baselines:
        anchored.update(d.arxiv_ids)
    return Anchors(living=living_doc, ids=frozenset(anchored), baselines=list(baselines))


@dataclass(frozen=True)
class IdSplit:
    """Every id of the window in order of first appearance, split into new and continued."""

    window: list[str]
    new: list[str]
    continued: list[str]


def _listed(doc: DocumentSummary) -> Sequence[str]:
    return doc.arxiv_ids if doc.kind == "baseline" else doc.arxiv_ids[:MAX_LISTED_IDS_PER_NOTE]


class IdOrder:
    """The window's ids in the order 四 lists them, gathered as the window is read: those of the sources that can
    feed increments first, then the axis's baselines', then every source's (first appearance counts)."""

    def __init__(self) -> None:
        self._eligible: dict[str, None] = {}
        self._baselines: dict[str, None] = {}
        self._all: dict[str, None] = {}

    def add(self, doc: DocumentSummary, *, eligible: bool, baseline: bool) -> None:
        listed = _listed(doc)
        self._all.update(dict.fromkeys(listed))
        if eligible:
            self._eligible.update(dict.fromkeys(listed))
        if baseline:
            self._baselines.update(dict.fromkeys(listed))

    def split(self, anchored: Collection[str]) -> IdSplit:
        """The ids, new unless anchored."""
        return split_ids([*self._eligible, *self._baselines, *self._all], anchored)


def split_ids(ids: Iterable[str], anchored: Collection[str]) -> IdSplit:
    """Ids in order (each once), new unless anchored; a note lists its first MAX_LISTED_IDS_PER_NOTE only (a
    baseline all of its own: it is an earlier briefing, bounded the same way)."""
    window = list(dict.fromkeys(ids))
    return IdSplit(
        window=window,
        new=[i for i in window if i not in anchored],
        continued=[i for i in window if i in anchored],
    )
