"""The sources that can feed increments: notes and cards on the axis, the most relevant of them read whole."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from processors.briefing_request import Loader
from processors.models import Document, DocumentSummary, Relevance
from processors.reasons import ROLE_CODES
from processors.units import card_anchors


def read_whole(docs: Iterable[DocumentSummary], load: Loader | None) -> dict[str, Document]:
    """path → the whole document, loading those given only as summaries (one that does not read back is left
    out: `processors.damaged_notes` takes it for damaged)."""
    docs = list(docs)
    out = {d.path: d for d in docs if isinstance(d, Document)}
    missing = list(dict.fromkeys(d.path for d in docs if not isinstance(d, Document) and d.path not in out))
    if missing:
        if load is None:
            raise ValueError(f"{len(missing)} summaries need their text, but no loader was given")
        out.update((d.path, d) for d in load(missing))
    return out


def can_contribute(doc: DocumentSummary, rel: Relevance) -> bool:
    """An inbox note or card that is neither a role (baseline, reference, adjacent) nor low."""
    return doc.kind in ("inbox", "paper_card") and rel.code not in ROLE_CODES and rel.code != "low"


RankKey = tuple[bool, float, str]


def rank_key(axis: str, doc: DocumentSummary, rel: Relevance) -> RankKey:
    """Where a source that can contribute ranks, the most relevant least: cards anchored into the axis first."""
    return (not card_anchors(doc, axis), -rel.score, doc.path)


@dataclass(frozen=True)
class _Worst:
    """A ranking key compared backwards: the root of a heap of them is the worst kept so far."""

    key: RankKey

    def __lt__(self, other: _Worst) -> bool:
        return self.key > other.key


class Contributors:
    """The `limit` most relevant sources that can contribute, cards anchored into the axis first, kept as the
    window is read (in window order when asked), and the `reserve` next to them (to fill a slot a damaged one
    frees)."""

    def __init__(self, axis: str, limit: int, reserve: int = 0) -> None:
        self._axis = axis
        self._limit = limit
        self._held = limit + reserve if limit > 0 else 0
        self._heap: list[tuple[_Worst, int, DocumentSummary, Relevance]] = []
        self.spilled = False  # whether a source that can contribute was ranked below all those held

    def offer(self, position: int, doc: DocumentSummary, rel: Relevance) -> None:
        """Rank a source that can contribute (`can_contribute`); `position` is its place in the window."""
        if self._held <= 0:
            return
        key = rank_key(self._axis, doc, rel)
        # Most of a large window ranks below the root: compared by key, never wrapped.
        if len(self._heap) < self._held:
            heapq.heappush(self._heap, (_Worst(key), position, doc, rel))
            return
        self.spilled = True
        if key < self._heap[0][0].key:
            heapq.heapreplace(self._heap, (_Worst(key), position, doc, rel))

    def ranked(self) -> list[tuple[int, DocumentSummary, Relevance]]:
        """The chosen sources in window order, each with its place."""
        chosen = sorted(self._heap, key=lambda e: e[0].key)[: self._limit]
        return [(p, d, r) for _, p, d, r in sorted(chosen, key=lambda e: e[1])]

    def cut(self) -> RankKey | None:
        """The key of the last source held once one was ranked below it (none not held ranks above it), else None."""
        return self._heap[0][0].key if self.spilled else None

    def reserve(self) -> list[tuple[int, DocumentSummary, Relevance]]:
        """The sources held beyond the chosen ones, the most relevant first, each with its place."""
        return [(p, d, r) for _, p, d, r in sorted(self._heap, key=lambda e: e[0].key)[self._limit :]]
