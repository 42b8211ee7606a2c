"""The window's sources as the briefing lists them: topic line, relevance, status, and why no increment."""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from processors.arxiv_ids import card_number_from_name
from processors.errors import ProcessorError
from processors.i18n import Lang, say
from processors.increment_search import Found
from processors.models import (
    AxisSpec,
    Document,
    DocumentSummary,
    Kind,
    NoIncrementSource,
    Relevance,
    SourceEntry,
    SourceStatus,
    WindowBounds,
    built,
)
from processors.near_duplicates import DuplicateOf
from processors.reasons import NoIncrementCode
from processors.relevance import Scorer, declared_axes, relevance
from processors.source_columns import ListingColumns
from processors.source_facts import heading_topic
from processors.units import card_anchors
from processors.window import in_window
from processors.window_rows import SourceRow


def topic_line(doc: DocumentSummary, axis: str, lang: Lang, headings: str | None = None) -> str:
    """A one-line summary of what a source is about: the line its headings make (`headings`, when worked out
    as it was stored), its card fields, or what a baseline is."""
    if doc.kind == "paper_card":
        card = card_number_from_name(doc.path) or str(doc.front_matter.get("card", ""))
        primary = str(doc.front_matter.get("primary") or "—")
        text = say("topic.card", lang, card=card, title=doc.title, primary=primary)
        anchors = card_anchors(doc, axis)
        if anchors:
            text += " · " + say("topic.anchor", lang, axis=axis, sections="/".join(anchors))
        return text
    if doc.kind == "baseline" and doc.baseline_axis == axis:
        return say("topic.baseline", lang)
    return headings if headings is not None else heading_topic(doc.title, doc.headings)


def source_entry(
    doc: DocumentSummary,
    axis: str,
    rel: Relevance,
    status: SourceStatus,
    duplicate: DuplicateOf | None,
    lang: Lang,
    topic: str | None = None,  # the line its headings make, when stored
) -> SourceEntry:
    # One per source of the window (100k in the largest): built from validated parts, so not re-validated.
    return built(
        SourceEntry,
        {
            "path": doc.path,
            "writer": sys.intern(doc.writer) if doc.writer else doc.writer,
            "kind": doc.kind,
            "event_time": doc.event_time,
            "bytes": doc.bytes,
            "title": doc.title,
            "relevance": rel,
            "status": status,
            "duplicate_of": duplicate.kept if duplicate else None,
            "duplicate_kind": duplicate.kind if duplicate else None,
            "similarity": duplicate.similarity if duplicate else None,
            "warnings": doc.warnings,
            "warning_codes": doc.warning_codes,
            "topic": topic_line(doc, axis, lang, topic),
        },
    )


# Sources listed between two looks at the build's stop: ~0.1-0.2 s of a 100k window's accounting.
GO_ON_EVERY = 10_000


@dataclass(frozen=True)
class AccountContext:
    """What accounting for sources needs besides the window and the increments."""

    axis: str
    anchored: Collection[str]
    queue_items: Mapping[str, int]
    lang: Lang
    go_on: Callable[[], None] = lambda: (
        None
    )  # every GO_ON_EVERY sources: the request's (`BriefingRequest.go_on`)
    # Each reason said once (a 100k window's sources share a few hundred), but a duplicate's: one a source.
    _said: dict[tuple[object, ...], str] = field(default_factory=dict, compare=False, repr=False)

    def say(self, key: str, values: Mapping[str, object]) -> str:
        """`say` of the phrase `key`, formatted with `values`: the same string for the same values."""
        k = (key, *values.values())
        said = self._said.get(k)
        if said is None:
            said = self._said[k] = say(key, self.lang, **values)
        return said


class Standing(NamedTuple):
    """How one source stands for the axis: its relevance, what it duplicates, whether it had candidates."""

    rel: Relevance
    duplicate: DuplicateOf | None
    low: bool
    other_axis: str | None
    had_candidates: bool


class Listed(NamedTuple):
    """What 六 reads of a source besides its standing."""

    path: str
    kind: Kind
    baseline_axis: str | None
    arxiv_ids: tuple[str, ...]  # () when no reason reads them (a duplicate, a role, a low source)


def no_increment(doc: Listed, st: Standing, ctx: AccountContext, selected: int) -> NoIncrementSource:
    """Why a source of the window yields no increment, in words and as a code."""

    def out(code: NoIncrementCode, key: str, **values: object) -> NoIncrementSource:
        reason = say(key, ctx.lang, **values) if code == "duplicate" else ctx.say(key, values)
        return built(NoIncrementSource, {"path": doc.path, "reason": reason, "code": code})

    if st.duplicate is not None and st.duplicate.kind == "near":
        return out(
            "duplicate",
            "why.near_duplicate",
            of=st.duplicate.kept,
            similarity=f"{st.duplicate.similarity:.2f}",
        )
    if st.duplicate is not None:
        return out("duplicate", "why.duplicate", of=st.duplicate.kept)
    if st.rel.code == "baseline":
        return out("baseline", "why.baseline")
    if doc.kind == "baseline":
        return out("reference", "why.reference", axis=doc.baseline_axis or "?")
    if doc.kind == "work_queue":
        n = ctx.queue_items.get(ctx.axis, 0)
        return out("work_queue", "why.work_queue_has" if n else "why.work_queue", axis=ctx.axis, n=n)
    if st.rel.code == "adjacent":
        other = st.other_axis or say("why.adjacent_axis_unknown", ctx.lang)
        return out("adjacent", "why.adjacent", other=other, axis=ctx.axis)
    if st.low:
        return out("low", "why.low", axis=ctx.axis, score=f"{st.rel.score:.2f}")
    if doc.arxiv_ids and all(i in ctx.anchored for i in doc.arxiv_ids):
        return out("covered", "why.covered", ids=" / ".join(doc.arxiv_ids[:4]))
    if st.had_candidates:
        return out("not_selected", "why.not_selected", n=selected)
    return out("no_content", "why.no_content")


def queue_counts(queues: Sequence[Document], axes: Sequence[AxisSpec]) -> dict[str, int]:
    """Per axis, the lines of the window's work queues that carry its label."""
    out: dict[str, int] = {}
    for d in queues:
        for name, n in work_queue_items(d, [a.name for a in axes]).items():
            out[name] = out.get(name, 0) + n
    return out


def work_queue_items(doc: Document, axis_names: Collection[str]) -> dict[str, int]:
    """How many lines of a work queue carry each axis label (`1. llm-infra: …`)."""
    counts: dict[str, int] = {}
    for line in doc.text.splitlines():
        for name in axis_names:
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line):
                counts[name] = counts.get(name, 0) + 1
    return counts


@dataclass(frozen=True)
class Accounts:
    """一/五's entry for every source of the window, and 六's reason for each that yielded no increment."""

    sources: list[SourceEntry]
    no_increment: list[NoIncrementSource]

    def without(self, paths: Collection[str]) -> Accounts:
        """These accounts but for `paths` (notes whose stored text did not read back: listed as rejected, once)."""
        if not paths:
            return self
        return Accounts(
            [s for s in self.sources if s.path not in paths],
            [n for n in self.no_increment if n.path not in paths],
        )


def _other_axis(doc: DocumentSummary, axis: str, scores: Mapping[str, float]) -> str | None:
    declared, _ = declared_axes(doc)
    others = sorted((declared & scores.keys()) - {axis}) or [
        k for k, _ in sorted(scores.items(), key=lambda kv: -kv[1]) if k != axis
    ]
    return others[0] if others else None


class SourceListing:
    """一/五's entry of every source, made as the window is read, and 六's reasons once the increments are known.

    Sources come in any order, each with its place in the window; what is kept of each is what its entry and
    its reason are made of, as columns (`processors.source_columns`): its entry is made by `accounts`.
    """

    def __init__(self, duplicates: Mapping[str, DuplicateOf], axis: str, lang: Lang) -> None:
        self.duplicates = duplicates
        self._axis = axis
        self._lang = lang
        self._positions = array("q")
        self._columns = ListingColumns()
        self._accounted = False
        self._kept_ids: dict[str, tuple[str, ...]] = {}  # a duplicate's kept in its damaged original's place

    def add(self, row: SourceRow, scores: Mapping[str, float], rel: Relevance) -> None:
        d = row.doc
        # Only a source that can be `covered` has its ids read again, only an adjacent one its other axis.
        plain = d.path not in self.duplicates and rel.code not in _NOT_PLAIN and d.kind not in _ROLES
        other = _other_axis(d, self._axis, scores) if rel.code == "adjacent" else None
        topic = topic_line(d, self._axis, self._lang, row.topic)
        self._positions.append(row.position)
        self._columns.add(d, rel, (topic, other, d.arxiv_ids if plain else ()))

    def keep(self, doc: DocumentSummary, rel: Relevance) -> None:
        """A duplicate kept in the place of its group's damaged original: its ids read as a kept source's are."""
        if rel.code not in _NOT_PLAIN and doc.kind not in _ROLES:
            self._kept_ids[doc.path] = doc.arxiv_ids

    def standing(self, paths: Collection[str]) -> dict[str, tuple[int, Relevance]]:
        """The place in the window and the relevance of each source at `paths`, as listed (a pass over the
        listing: for the few duplicates of a note that did not read back)."""
        found = self._columns.find(paths)
        return {p: (self._positions[i], rel) for p, (i, rel) in found.items()}

    def accounts(self, found: Found, ctx: AccountContext) -> Accounts:
        """Every source listed in window order: used, or why not (duplicate, role, low, covered …); once (the
        listing is emptied)."""
        if (
            self._accounted
        ):  # a second call would list no source: an empty briefing, said as if the window were
            raise ProcessorError("the window's listing was accounted for already; this is a bug, report it")
        self._accounted = True
        used, had_candidates = found.used_docs, found.candidate_docs
        rows, positions = self._columns.rows(), self._positions
        # Emptied: the columns' texts (~20 MB at 100k) are the rows' strings now.
        self._columns, self._positions = ListingColumns(), array("q")
        texts, facets_of, ids_of = rows.texts, rows.facets, rows.values[3]
        if kept := self._kept_ids:  # a pass only when a damaged note's copy took its place
            ids_of = [kept.get(texts[3 * i], ids) for i, ids in enumerate(ids_of)]
        sources: list[SourceEntry] = []
        no_inc: list[NoIncrementSource] = []
        for n, i in enumerate(sorted(range(len(positions)), key=positions.__getitem__), 1):
            if n % GO_ON_EVERY == 0:
                ctx.go_on()
            path = texts[3 * i]
            if path in used:  # a contributor: never a duplicate
                sources.append(rows.entry(i, "used", None))
                continue
            dup = self.duplicates.get(path)
            entry = rows.entry(i, "duplicate" if dup else "no_increment", dup)
            sources.append(entry)
            rel, facets = entry.relevance, facets_of[i]
            standing = Standing(rel, dup, rel.code == "low", facets.other_axis, path in had_candidates)
            listed = Listed(path, facets.kind, facets.baseline_axis, ids_of[i])
            no_inc.append(no_increment(listed, standing, ctx, len(found.increments)))
        return Accounts(sources=sources, no_increment=no_inc)


_NOT_PLAIN = ("baseline", "adjacent", "low")
_ROLES = ("baseline", "work_queue")


def superseded_entries(
    superseded: Sequence[SourceRow], current: Mapping[str, SourceRow], window: WindowBounds, scorer: Scorer
) -> list[SourceEntry]:
    """Earlier versions of the window's notes, listed as superseded.

    A version whose note is a kept source of the window (`current`: its row) is weighed by that source's
    counts, as the briefing has always listed it: the relevance shown is its note's.
    """
    out = []
    space, axis = scorer.space, scorer.axis
    for row in sorted(superseded, key=lambda r: (r.doc.event_time, r.doc.path)):
        d = row.doc
        if not in_window(d.event_time, window):
            continue
        now = current.get(d.path)
        scored = (
            row if now is None else SourceRow(row.position, d, now.length or d.length, now.hits, now.counted)
        )
        shown = row if now is None or not now.counted else now
        terms_ = space.evidence_of(shown.hits, axis)
        scores = space.scores_of(scored.hits, scored.length)
        rel = relevance(d, axis, scores, scorer.rules, scorer.lang, terms_)
        out.append(source_entry(d, axis, rel, "superseded", None, scorer.lang, row.topic))
    return out
