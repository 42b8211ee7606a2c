"""What the axis already cites (living document, earlier briefings, its baseline) and the window's ids split by it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

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
    return anchored_by(baselines, parse_living_doc(living) if living is not None else None, earlier_cited)


def anchored_by(
    baselines: Sequence[DocumentSummary], living_doc: LivingDoc | None, earlier_cited: Collection[str]
) -> Anchors:
    """`anchor_ids` of a living document parsed already (again, once a baseline did not read back)."""
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
    """The window's ids in the order 四 lists them: those of the sources that can feed increments first, then the
    axis's baselines', then every source's, each by its first appearance in the window. Sources may be added in
    any order: each comes with its place in the window, and the ids are put in order once, at the end."""

    def __init__(self) -> None:
        self._eligible: list[tuple[int, Sequence[str]]] = []
        self._baselines: list[tuple[int, Sequence[str]]] = []
        self._all: list[tuple[int, Sequence[str]]] = []

    def add(self, position: int, doc: DocumentSummary, *, eligible: bool, baseline: bool) -> None:
        listed = _listed(doc)
        if not listed:
            return
        entry = (position, listed)
        self._all.append(entry)
        if eligible:
            self._eligible.append(entry)
        if baseline:
            self._baselines.append(entry)

    def drop(self, positions: Collection[int]) -> None:
        """Forget the ids of the sources at `positions` (notes that did not read back: listed as rejected only)."""
        if positions:
            for group in (self._eligible, self._baselines, self._all):
                group[:] = [e for e in group if e[0] not in positions]

    def promote(self, position: int, *, eligible: bool, baseline: bool) -> None:
        """List the ids of the source at `position` as `add` would have (a duplicate that took the place of its
        group's damaged original)."""
        entries = [e for e in self._all if e[0] == position]
        if eligible:
            self._eligible.extend(entries)
        if baseline:
            self._baselines.extend(entries)

    def split(self, anchored: Collection[str]) -> IdSplit:
        """The ids, new unless anchored."""
        groups = (self._eligible, self._baselines, self._all)
        # Chained in C: a window of 10k sources lists ~150k ids.
        ordered = chain.from_iterable(ids for g in groups for _, ids in sorted(g, key=itemgetter(0)))
        return split_ids(ordered, anchored)


def split_ids(ids: Iterable[str], anchored: Collection[str]) -> IdSplit:
    """Ids in order (each once), new unless anchored; a note lists its first MAX_LISTED_IDS_PER_NOTE only (a
    baseline all of its own: it is an earlier briefing, bounded the same way)."""
    window = list(dict.fromkeys(ids))
    return IdSplit(
        window=window,
        new=[i for i in window if i not in anchored],
        continued=[i for i in window if i in anchored],
    )
