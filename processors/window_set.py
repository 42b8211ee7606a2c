"""A window held in memory as summaries, read as a briefing reads a stored one (`processors.window_rows`)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from processors.fan_out import keyword_terms
from processors.id_titles import stated_titles
from processors.models import AxisSpec, DocumentSummary, WindowBounds
from processors.near_duplicates import DuplicateOf, Fingerprint, find_duplicates
from processors.relevance import bm25_length, doc_counts
from processors.window import in_window
from processors.window_rows import SourceRow, StatedTitles, WindowStatistics, statistics_of


def window_duplicates(docs: Sequence[DocumentSummary], threshold: float) -> dict[str, DuplicateOf]:
    """path → the earliest document with the same, or nearly the same, text (MinHash Jaccard ≥ threshold)."""
    return find_duplicates(
        (Fingerprint(d.path, d.event_time, d.text_hash, d.signature) for d in docs), threshold
    )


def belongs(doc: DocumentSummary, axis: str, window: WindowBounds) -> bool:
    """A note or card dated in the window, or this axis's own baseline from before it opened (yesterday's)."""
    own_baseline = doc.kind == "baseline" and doc.baseline_axis == axis and doc.event_time < window.end
    return doc.kind != "living" and (in_window(doc.event_time, window) or own_baseline)


def row_of(
    position: int, doc: DocumentSummary, counts: Mapping[str, int], profile: Collection[str]
) -> SourceRow:
    """A source's row from its term counts: the counts of the `profile` terms it uses, and its BM25 length."""
    hits = {t: n for t, n in counts.items() if t in profile}
    return SourceRow(position, doc, bm25_length(doc, counts), hits, counted=bool(counts))


class MemoryWindow:
    """The window's sources among `documents` (summaries or whole documents), in window order."""

    def __init__(
        self,
        documents: Sequence[DocumentSummary],
        superseded: Sequence[DocumentSummary],
        place: tuple[str, WindowBounds],
        axes: Sequence[AxisSpec],
    ) -> None:
        axis, window = place
        key = lambda d: (d.event_time, d.path)  # noqa: E731
        self.docs = sorted((d for d in documents if belongs(d, axis, window)), key=key)
        self._superseded = sorted(superseded, key=key)
        self._keep = keyword_terms(tuple(axes))
        self._counts: dict[str, Mapping[str, int]] = {}

    def _counts_of(self, doc: DocumentSummary) -> Mapping[str, int]:
        counts = self._counts.get(doc.path)
        if counts is None:
            counts = self._counts[doc.path] = doc_counts(doc, self._keep)
        return counts

    def size(self) -> int:
        return len(self.docs)

    def duplicates(self, threshold: float) -> dict[str, DuplicateOf]:
        return window_duplicates(self.docs, threshold)

    def statistics(self, left_out: Collection[str]) -> WindowStatistics:
        kept = [d for d in self.docs if d.path not in left_out]
        counts = [self._counts_of(d) for d in kept]
        return statistics_of(counts, [bm25_length(d, c) for d, c in zip(kept, counts, strict=True)])

    def rows(self, profile: Collection[str]) -> Iterator[SourceRow]:
        profile = frozenset(profile)
        return (row_of(n, d, self._counts_of(d), profile) for n, d in enumerate(self.docs))

    def superseded(self, profile: Collection[str]) -> list[SourceRow]:
        profile = frozenset(profile)
        # Their counts are not the current versions' (same path): never cached.
        return [row_of(n, d, doc_counts(d, self._keep), profile) for n, d in enumerate(self._superseded)]

    def arxiv_ids(self) -> list[str]:
        return list(dict.fromkeys(i for d in self.docs for i in d.arxiv_ids))

    def titles(self, left_out: Collection[str]) -> StatedTitles:
        out = StatedTitles()
        for position, doc in enumerate(self.docs):
            if doc.path not in left_out and (stated := stated_titles(doc)):
                out.best.add(stated, position)
                out.pairs.add(stated, position)
        return out
