"""Placement: which living-document sections an increment relates to, and which it should go into.

In order: a paper card's `anchors:` section; the sections that already cite the increment's ids; else the
one content section whose own text is closest to the increment's title and key points — the titles of the
papers it lists (or its prose), and its heading, a strong signal on its own. When none is close enough the
briefing says "no section fits" instead of forcing one. Boilerplate sections are never suggested or related.

The similarity lives in the living document's own term space: stemmed terms (`evicting`, `eviction` →
`evict`) weighted by how few of its listed titles use them, so that `kv cache`, which every entry of a
KV-cache list carries, decides nothing. A section's score is the mean cosine of its `NEIGHBOURS` closest
passages, plus `HEADING_WEIGHT` when the increment's title contains one of the heading's phrases
(`Pruning / Evicting / Sparse` has three). The threshold `FIT` is calibrated on the real October2001
KV-cache list (docs/placement.md): leave-one-out on its 162 titles, the benchmark's labelled fits, and 55
speculative-decoding papers that belong nowhere in it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import snowballstemmer

from processors.arxiv_ids import strip_version
from processors.i18n import Lang, say
from processors.key_points import key_points
from processors.living_doc import (
    LivingDoc,
    LivingSection,
    content_citing,
    find_section,
    section_label,
    section_title,
)
from processors.models import Frozen, SectionRelation, SectionSuggestion, UnplacedReason
from processors.tfidf import TfIdf, Vector, cosine
from processors.tokens import CJK, terms
from processors.units import Unit

FIT = 0.20  # a section this close (mean neighbour cosine + heading bonus) is where the increment goes
# A small document (a dozen prose paragraphs, as in a §-numbered living document) knows too few terms for
# cosines to reach `FIT`; there a section that stands this far above the next one is still the place, above a
# `FLOOR` of noise. A long list gains nothing from it (it only adds false fits there): it is not used there.
SMALL = 40  # passages
STANDOUT = 2.5
FLOOR = 0.06
HEADING_WEIGHT = 0.30  # the heading's phrase in the title: enough on its own to pass `FIT`
NEIGHBOURS = 3
MAX_SUGGESTIONS = 4
MAX_RELATIONS = 4
MAX_NAMES = 6  # "already anchors": a few names, not the whole list
_NAME_CHARS = 40

_STEMMER = snowballstemmer.stemmer("english")
_LATIN = re.compile(rf"^[^{CJK}]+$")
# Alternatives a heading names: `Pruning / Evicting / Sparse`, `Hybrid Memory 与分层 Offloading`.
_ALTERNATIVES = re.compile(r"(?<!\s)\s*+(?:/|／|&|、|，|,|\||·|\band\b|与|和|及)\s*", re.IGNORECASE)


@lru_cache(maxsize=65536)
def _stem(term: str) -> str:
    return str(_STEMMER.stemWord(term)) if _LATIN.match(term) else term


def stems(text: str) -> tuple[str, ...]:
    """Index terms of a text in order, English words stemmed, CJK as character bigrams."""
    return tuple(map(_stem, terms(text)))


def _contains(seq: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    return any(tuple(seq[i : i + n]) == tuple(phrase) for i in range(len(seq) - n + 1))


@dataclass(frozen=True)
class _Place:
    section: LivingSection
    vectors: tuple[Vector, ...]  # one per passage
    phrases: tuple[tuple[str, ...], ...]  # the heading's alternatives, stemmed


class SectionIndex:
    """The placeable sections of a living document in its own stemmed TF-IDF space."""

    def __init__(self, living: LivingDoc) -> None:
        places = [s for s in living.sections if s.placeable]
        self.model = TfIdf(Counter(stems(p)) for s in places for p in s.passages)
        self.small = sum(len(s.passages) for s in places) < SMALL
        self._items: dict[str, Vector] = {}
        self._places = [
            _Place(
                section=s,
                vectors=tuple(v for v in (self.vector(p) for p in s.passages) if v),
                phrases=tuple(p for p in (stems(a) for a in _ALTERNATIVES.split(s.title)) if p),
            )
            for s in places
        ]

    def vector(self, text: str, title: str = "") -> Vector:
        """A text's vector, its title counted twice (the title says what it is about)."""
        counts = Counter(stems(text))
        counts.update({t: 2 * n for t, n in Counter(stems(title)).items()})
        return self.model.vector(counts)

    def _score(self, place: _Place, vec: Vector, title: Sequence[str]) -> float:
        sims = sorted((cosine(vec, v) for v in place.vectors), reverse=True)[:NEIGHBOURS]
        near = sum(sims) / len(sims) if sims else 0.0
        heading = any(_contains(title, p) for p in place.phrases)
        return near + (HEADING_WEIGHT if heading else 0.0)

    def scores(self, title: str, points: Sequence[str]) -> list[tuple[LivingSection, float]]:
        """Every placeable section with its score for an increment's title and key points, best first."""
        vec = self.vector("\n".join(points), title)
        seq = stems(title)
        scored = [(p.section, round(self._score(p, vec, seq), 4)) for p in self._places]
        return sorted(scored, key=lambda item: -item[1])

    def fitting(self, title: str, points: Sequence[str]) -> LivingSection | None:
        """The section the increment goes into by its text, None when none reaches `FIT`."""
        scores = self.scores(title, points)
        if not scores:
            return None
        (best, score), runner_up = scores[0], (scores[1][1] if len(scores) > 1 else 0.0)
        standout = self.small and score >= FLOOR and score >= STANDOUT * runner_up
        return best if score >= FIT or standout else None

    def closest_point(self, section: LivingSection, points: Sequence[str]) -> str:
        """The key point that belongs in `section` most, '' without points."""
        place = next((p for p in self._places if p.section == section), None)
        if place is None or not points:
            return ""
        return max(points, key=lambda t: self._score(place, self.vector(t), stems(t)))

    def _item_vector(self, title: str) -> Vector:
        # The index lives as long as its document: each listed title is vectorised once, not per increment.
        vec = self._items.get(title)
        if vec is None:
            vec = self._items[title] = self.vector(title)
        return vec

    def names(self, section: LivingSection, ids: Iterable[str], near: str) -> list[str]:
        """What the section already anchors: the items citing `ids` first, then those closest to `near`."""
        wanted = {strip_version(i) for i in ids}
        vec = self.vector(near)
        order = sorted(
            enumerate(section.items),
            key=lambda e: (not wanted & set(e[1].ids), -cosine(vec, self._item_vector(e[1].title)), e[0]),
        )
        names: list[str] = []
        for _, item in order:
            name = short_name(item.title)
            if name not in names:
                names.append(name)
            if len(names) >= MAX_NAMES:
                break
        return names


@lru_cache(maxsize=8)
def section_index(living: LivingDoc) -> SectionIndex:
    """The index of a living document, built once for every increment of its briefings."""
    return SectionIndex(living)


def short_name(title: str) -> str:
    """A title short enough to list: `SnapKV: LLM Knows What …` → `SnapKV`; a long one cut at a word."""
    if len(title) <= _NAME_CHARS:
        return title
    head = title.split(":", 1)[0].strip()
    if ":" in title and 2 <= len(head) <= _NAME_CHARS:
        return head
    return title[: _NAME_CHARS + 1].rsplit(" ", 1)[0].rstrip(" ,;:—-") + "…"


@dataclass(frozen=True)
class PlacementQuery:
    """What placement reads of an increment: its title, key points, ids, and the units it was built from."""

    title: str
    points: tuple[str, ...]
    ids: tuple[str, ...]
    units: tuple[Unit, ...]


class Placement(Frozen):
    """Where an increment goes and what it relates to; `unplaced` says why nothing is suggested."""

    suggestions: list[SectionSuggestion]
    relations: list[SectionRelation]
    unplaced: UnplacedReason | None = None


def _suggestion(
    s: LivingSection, reason: str, via: Literal["anchor", "arxiv_id", "text"]
) -> SectionSuggestion:
    return SectionSuggestion(section=section_label(s), title=section_title(s), reason=reason, via=via)


def _suggestions(living: LivingDoc, q: PlacementQuery) -> list[SectionSuggestion]:
    """Card anchors, then the sections citing the ids, then the section each text fits, if any."""
    index = section_index(living)
    ids = " · ".join(q.ids)
    out: dict[str, SectionSuggestion] = {}
    for label in dict.fromkeys(a for u in q.units for a in u.anchors):
        s = find_section(living, label)
        if s is not None and s.boilerplate is not None:
            continue  # a card anchored into the licence is no reason to write there
        reason = ids or (index.closest_point(s, q.points) if s else "") or next(iter(q.points), "")
        suggestion = (
            _suggestion(s, reason, "anchor")
            if s
            else SectionSuggestion(section=label, title="", reason=reason, via="anchor")
        )
        out.setdefault(suggestion.section, suggestion)
    for s in content_citing(living, q.ids):
        out.setdefault(section_label(s), _suggestion(s, ids, "arxiv_id"))
    # A paper is one query; a note without ids is several topics, each unit placed on its own.
    queries = (
        [(q.title, q.points)]
        if q.ids or not q.units
        else [(u.heading, tuple(key_points([u.text], limit=4))) for u in q.units]
    )
    for title, points in queries:
        s = index.fitting(title, points)
        if s is not None and section_label(s) not in out:
            reason = index.closest_point(s, points) or ids or title
            out[section_label(s)] = _suggestion(s, reason, "text")
    return list(out.values())[:MAX_SUGGESTIONS]


def _relations(
    living: LivingDoc, q: PlacementQuery, suggestions: Sequence[SectionSuggestion]
) -> list[SectionRelation]:
    """The sections citing the ids, then those suggested: each with what it already anchors."""
    index = section_index(living)
    near = "\n".join([q.title, q.title, *q.points])
    found: dict[str, tuple[LivingSection, Literal["arxiv_id", "text"]]] = {
        section_label(s): (s, "arxiv_id") for s in content_citing(living, q.ids)
    }
    for sug in suggestions:
        s = find_section(living, sug.section)
        if s is not None:
            found.setdefault(section_label(s), (s, "text"))
    return [
        SectionRelation(section=label, title=section_title(s), anchored=index.names(s, q.ids, near), via=via)
        for label, (s, via) in list(found.items())[:MAX_RELATIONS]
    ]


def place(living: LivingDoc | None, query: PlacementQuery) -> Placement:
    """Where an increment goes in the living document and which of its sections already cover it."""
    if living is None:
        return Placement(suggestions=[], relations=[], unplaced="no_living_document")
    suggestions = _suggestions(living, query)
    return Placement(
        suggestions=suggestions,
        relations=_relations(living, query, suggestions),
        unplaced=None if suggestions else "no_section_fits",
    )


def join_labels(labels: Sequence[str], lang: Lang = "zh") -> str:
    """`§3.3/§3.6`; labels that are titles (`Pruning / Evicting / Sparse`) need a separator of their own."""
    if all(label.startswith("§") for label in labels):
        return "/".join(labels)
    return ("；" if lang == "zh" else "; ").join(labels)


def write_action(sections: Sequence[str], unplaced: UnplacedReason | None, lang: Lang) -> str:
    """七's action for an increment: where to write it, or plainly that no section fits."""
    if sections:
        return say("pri.write", lang, sections=join_labels(sections, lang))
    return say("pri.no_fit" if unplaced == "no_section_fits" else "pri.tbd", lang)
