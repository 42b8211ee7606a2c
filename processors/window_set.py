"""Which documents an axis window holds, and which of them repeat an earlier one (exactly or nearly)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from processors.models import DocumentSummary, WindowBounds
from processors.near_duplicates import DuplicateOf, Fingerprint, find_duplicates
from processors.window import in_window


def window_duplicates(docs: Sequence[DocumentSummary], threshold: float) -> dict[str, DuplicateOf]:
    """path → the earliest document with the same, or nearly the same, text (MinHash Jaccard ≥ threshold)."""
    return find_duplicates(
        (Fingerprint(d.path, d.event_time, d.text_hash, d.signature) for d in docs), threshold
    )


@dataclass(frozen=True)
class WindowSet:
    """The window's documents in time order, their duplicates, and the ones kept."""

    docs: list[DocumentSummary]
    duplicates: dict[str, DuplicateOf]
    kept: list[DocumentSummary]


def collect_window(
    documents: Sequence[DocumentSummary], axis: str, window: WindowBounds, threshold: float
) -> WindowSet:
    """The window's notes and cards, plus this axis's own baseline from before it opened (yesterday's)."""

    def belongs(d: DocumentSummary) -> bool:
        own_baseline = d.kind == "baseline" and d.baseline_axis == axis and d.event_time < window.end
        return d.kind != "living" and (in_window(d.event_time, window) or own_baseline)

    docs = sorted((d for d in documents if belongs(d)), key=lambda d: (d.event_time, d.path))
    duplicates = window_duplicates(docs, threshold)
    return WindowSet(docs=docs, duplicates=duplicates, kept=[d for d in docs if d.path not in duplicates])
