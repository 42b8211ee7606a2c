"""The window as a briefing reads it: one row per source, in window order, and figures of the whole window.

A window can hold 100k notes. A briefing does not hold their summaries: it reads rows, chunk by chunk, and
keeps what it quotes. The rows come from the state (`sinks.window_reads`, out of what was computed when each
version was stored) or, for a window held in memory, from its summaries (`processors.window_set`); either
way the briefing is the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from processors.id_conflicts import BoundedTitles
from processors.id_titles import BestTitles
from processors.models import DocumentSummary
from processors.near_duplicates import DuplicateOf
from processors.tfidf import Frequencies


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One source: its place in the window, its summary (without signature and term counts), its BM25 length and
    its counts of the profile terms."""

    position: int  # in window order (event time, path), from 0
    doc: DocumentSummary
    length: int
    hits: Mapping[str, int]  # its counts of the terms asked for (the axis profiles'), those it uses
    counted: bool = True  # it has term counts at all (an older record may have none)
    topic: str | None = (
        None  # the line its headings make, when worked out as it was stored (then `doc` has none)
    )


@dataclass(frozen=True)
class WindowStatistics:
    """What relevance needs of a window's kept sources as a whole: their number, their mean length, and how many
    of them use each term (asked for by term: a briefing meets few of a large window's terms)."""

    documents: int
    average_length: float  # mean BM25 length of the sources with one; 1.0 when none has
    frequencies: Frequencies


def statistics_of(counts: Sequence[Mapping[str, int]], lengths: Sequence[int]) -> WindowStatistics:
    """The statistics of sources held in memory: their term counts and BM25 lengths."""
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    used = [n for n in lengths if n > 0]
    return WindowStatistics(
        documents=len(counts),
        average_length=sum(used) / len(used) if used else 1.0,
        frequencies=lambda terms: {t: df[t] for t in terms if t in df},
    )


@dataclass
class StatedTitles:
    """The titles the window's kept sources state for their ids: the best of each id, and the pairs id conflicts
    are looked for among."""

    best: BestTitles = field(default_factory=BestTitles)
    pairs: BoundedTitles = field(default_factory=BoundedTitles)


class WindowSource(Protocol):
    """The sources of one axis window: its notes and cards dated in it, plus the axis's latest baseline."""

    def size(self) -> int:
        """How many sources the window holds."""
        ...

    def duplicates(self, threshold: float) -> dict[str, DuplicateOf]:
        """path → the earliest source of its group, for each source that repeats one (exactly or nearly)."""
        ...

    def statistics(self, left_out: Collection[str]) -> WindowStatistics:
        """The term statistics of the window's sources but `left_out` (its duplicates)."""
        ...

    def rows(self, profile: Collection[str]) -> Iterator[SourceRow]:
        """Every source once, with its place in the window and its counts of the `profile` terms, in any order
        (a state streams them as stored)."""
        ...

    def superseded(self, profile: Collection[str]) -> list[SourceRow]:
        """The earlier versions of the window's notes that a newer one replaced (their positions mean nothing)."""
        ...

    def arxiv_ids(self) -> list[str]:
        """Every id the sources cite, in order of first appearance."""
        ...

    def titles(self, left_out: Collection[str]) -> StatedTitles:
        """The titles the sources but `left_out` (its duplicates) state for their ids, each at its place."""
        ...
