"""A window's listed sources as columns: a few machine words and bytes a source, not a dozen objects.

A 100k window's listing held ~2.8 KB of Python objects a source (its entry, its relevance, their dicts and
strings) through the whole briefing; as columns it is ~0.3 KB, and a source's entry is made when the briefing's
lists are (`SourceListing.accounts`).
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from math import copysign
from typing import Any, Generic, NamedTuple, TypeVar

from processors.models import (
    DocumentSummary,
    Kind,
    Relevance,
    SourceEntry,
    SourceStatus,
    built,
)
from processors.near_duplicates import DuplicateOf
from processors.reasons import RelevanceCode, WarningCode

_H = TypeVar("_H", bound=Hashable)
_CHUNK = 4096  # strings joined into one


class Interned(Generic[_H]):
    """Few distinct values (writers, kinds, axes, terms, ids), each stored once and told by its number."""

    def __init__(self) -> None:
        self.numbers: dict[_H, int] = {}
        self._values: list[_H] = []

    @property
    def values(self) -> list[_H]:
        if len(self._values) != len(self.numbers):
            self._values = list(self.numbers)  # in the order they were numbered
        return self._values


class Texts:
    """Strings one after another, joined a chunk of them at a time, each told by where it ends there."""

    def __init__(self) -> None:
        self._chunks: list[tuple[str, int]] = []  # (the strings joined, how many)
        self._pending: list[str] = []
        self._ends = array("q")
        self._at = 0

    def add(self, *texts: str) -> None:
        for text in texts:
            self._at += len(text)
            self._ends.append(self._at)
        self._pending += texts
        if len(self._pending) >= _CHUNK:
            self._chunks.append(("".join(self._pending), len(self._pending)))
            self._pending, self._at = [], 0

    def rows(self, width: int = 1, shared: tuple[int, ...] = ()) -> list[str]:
        """Every string, in the order added (`width` a row, each added whole); those at a place in `shared` one
        string for equal ones, made once: a 100k window's ~400 titles and ~40k topic lines (~28 MiB of copies)."""
        out: list[str] = []
        seen: dict[str, str] = {}
        first = 0
        for chunk, n in [*self._chunks, ("".join(self._pending), len(self._pending))]:
            if not n:
                continue
            ends = self._ends[first : first + n]
            part = [chunk[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
            for at in shared:  # a chunk starts a row: its strings are added a row at a time
                texts = part[at::width]
                part[at::width] = list(map(seen.setdefault, texts, texts))
            out += part
            first += n
        return out


class Column(Generic[_H]):
    """One interned value per row."""

    def __init__(self) -> None:
        self.table: Interned[_H] = Interned()
        self.numbers = array("i")  # each row's value's

    def add(self, value: _H) -> None:
        numbers = self.table.numbers
        self.numbers.append(numbers.setdefault(value, len(numbers)))

    def rows(self) -> list[_H]:
        """Every row's value, in the order added."""
        return list(map(self.table.values.__getitem__, self.numbers))


class Facets(NamedTuple):
    """What few distinct values a source has (interned: one tuple for all the sources that share them)."""

    writer: str | None
    kind: Kind
    baseline_axis: str | None
    other_axis: str | None  # an adjacent source's other axis
    label: str  # its relevance's label, code and stars
    code: RelevanceCode
    stars: int


Warnings = dict[int, tuple[tuple[str, ...], tuple[WarningCode, ...]]]  # by row, the few rows with any


class ListingColumns:
    """What a source's `SourceEntry` and its reason are made of, but its status and duplicate (the listing's),
    one row a source."""

    def __init__(self) -> None:
        self._texts = Texts()  # path, title, topic: three a row
        self._facets: Column[tuple[Any, ...]] = Column()  # each a `Facets`' values
        # Kept as they are (48 bytes each): made again from a number, each cost a few times its read.
        self._times: list[datetime] = []
        self._bytes = array("q")
        self._scores = array("d")
        # A relevance's terms, the ids a source can be covered by: the same few sets again and again.
        self._terms: Column[tuple[str, ...]] = Column()
        self._ids: Column[tuple[str, ...]] = Column()
        self._id_strings: dict[str, str] = {}
        self._warnings: Warnings = {}

    def add(
        self, doc: DocumentSummary, rel: Relevance, facts: tuple[str, str | None, tuple[str, ...]]
    ) -> None:
        """A source listed with the `facts` only the listing knows: its topic line, its other axis, its ids."""
        topic, other, ids = facts
        if doc.warnings or doc.warning_codes:
            self._warnings[len(self._bytes)] = (doc.warnings, doc.warning_codes)
        self._texts.add(doc.path, doc.title, topic)
        # A plain tuple, equal to its `Facets` (made once each when read out): a named one costs a call a row.
        self._facets.add((doc.writer, doc.kind, doc.baseline_axis, other, rel.label, rel.code, rel.stars))
        self._times.append(doc.event_time)
        self._bytes.append(doc.bytes)
        self._scores.append(rel.score)
        self._terms.add(rel.terms)
        if ids and ids not in self._ids.table.numbers:  # each id one string, however many sources cite it
            ids = tuple(map(self._id_strings.setdefault, ids, ids))
        self._ids.add(ids)

    def find(self, paths: Collection[str]) -> dict[str, tuple[int, Relevance]]:
        """The row and relevance of each source at `paths`, as `rows` makes them (a pass over every path)."""
        texts = self._texts.rows(3)
        facets, terms = self._facets, self._terms
        out: dict[str, tuple[int, Relevance]] = {}
        for i in (i for i in range(len(self._bytes)) if texts[3 * i] in paths):
            g = Facets._make(facets.table.values[facets.numbers[i]])
            grade = {"label": g.label, "code": g.code, "stars": g.stars, "score": self._scores[i]}
            out[texts[3 * i]] = (
                i,
                built(Relevance, {**grade, "terms": terms.table.values[terms.numbers[i]]}),
            )
        return out

    def rows(self) -> ListedRows:
        """The columns read out, a list each: the strings, tuples and relevances the entries are made of."""
        facets = list(map(Facets._make, self._facets.table.values))
        return ListedRows(
            self._texts.rows(3, shared=(1, 2)),
            list(map(facets.__getitem__, self._facets.numbers)),
            (self._times, self._bytes, self._relevances(facets), self._ids.rows()),
            self._warnings,
        )

    def _relevances(self, facets: Sequence[Facets]) -> list[Relevance]:
        """Each row's relevance, one object for the rows of equal ones (frozen: shared, never changed)."""
        made: dict[tuple[int, int, float, float], Relevance] = {}
        terms = self._terms.table.values
        out: list[Relevance] = []
        for f, t, score in zip(self._facets.numbers, self._terms.numbers, self._scores, strict=True):
            key = (f, t, score, copysign(1.0, score))  # 0.0 and -0.0 are equal, but not written alike
            rel = made.get(key)
            if rel is None:
                g = facets[f]
                grade = {"label": g.label, "code": g.code, "stars": g.stars}
                rel = made[key] = built(Relevance, {**grade, "score": score, "terms": terms[t]})
            out.append(rel)
        return out


@dataclass(frozen=True)
class ListedRows:
    """A listing's columns read out: each row's entry made on demand."""

    texts: list[str]  # path, title, topic: three a row
    facets: list[Facets]
    values: tuple[
        list[datetime], array[int], list[Relevance], list[tuple[str, ...]]
    ]  # times, bytes, rel, ids
    warnings: Warnings

    def entry(self, i: int, status: SourceStatus, duplicate: DuplicateOf | None) -> SourceEntry:
        """Row i's entry, as `processors.sources.source_entry` made it when the source was listed."""
        f, (times, sizes, relevances, _) = self.facets[i], self.values
        warnings, codes = self.warnings.get(i, ((), ()))
        return built(
            SourceEntry,
            {
                "path": self.texts[3 * i],
                "writer": f.writer,
                "kind": f.kind,
                "event_time": times[i],
                "bytes": sizes[i],
                "title": self.texts[3 * i + 1],
                "relevance": relevances[i],
                "status": status,
                "duplicate_of": duplicate.kept if duplicate else None,
                "duplicate_kind": duplicate.kind if duplicate else None,
                "similarity": duplicate.similarity if duplicate else None,
                "warnings": warnings,
                "warning_codes": codes,
                "topic": self.texts[3 * i + 2],
            },
        )
