"""Assemble the v1 briefing of one axis window from its documents: the one entry point of the briefing logic."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from processors import discrepancies as dx
from processors.arxiv_atom import NO_RECORDS, EnrichedId
from processors.credibility import CredibilityRules, assess
from processors.i18n import Lang
from processors.id_titles import best_titles, inline_names, titled_ids
from processors.increments import Context, IncrementRules, build, cluster_units, evaluate, select
from processors.living_doc import (
    SectionMatcher,
    parse_living_doc,
    section_label,
    section_title,
    sections_citing,
)
from processors.models import (
    ArxivEntry,
    ArxivMetadata,
    AxisSpec,
    Briefing,
    Document,
    DocumentSummary,
    Frozen,
    LivingDocRef,
    NoIncrementSource,
    Rejection,
    Relevance,
    SourceEntry,
    Summary,
    TitledId,
    Trigger,
    WindowBounds,
)
from processors.near_duplicates import DuplicateOf, Fingerprint, find_duplicates
from processors.priorities import priorities
from processors.relevance import AxisSpace, RelevanceRules, declared_axes, is_low, relevance
from processors.sources import no_increment, source_entry, work_queue_items
from processors.units import Unit, card_anchors, mention_units, units_of
from processors.window import in_window

_D_NUMBER = re.compile(r"(?<![A-Za-z0-9])D(\d{1,6})(?!\d)")
_ROLES = ("基线", "参考", "邻接")


class BriefingRules(Frozen):
    """Every tunable of the briefing logic; the defaults are what the README documents."""

    relevance: RelevanceRules = RelevanceRules()
    increments: IncrementRules = IncrementRules()
    credibility: CredibilityRules = CredibilityRules()


def window_duplicates(docs: Sequence[DocumentSummary], threshold: float) -> dict[str, DuplicateOf]:
    """path → the earliest document with the same, or nearly the same, text (MinHash Jaccard ≥ threshold)."""
    return find_duplicates(
        (Fingerprint(d.path, d.event_time, d.text_hash, d.signature) for d in docs), threshold
    )


def _other_axis(doc: DocumentSummary, axis: str, scores: Mapping[str, float]) -> str | None:
    declared, _ = declared_axes(doc)
    others = sorted(declared - {axis}) or [
        k for k, _ in sorted(scores.items(), key=lambda kv: -kv[1]) if k != axis
    ]
    return others[0] if others else None


def _units(
    contributors: Sequence[tuple[Document, Relevance]],
    axis: str,
    space: AxisSpace,
    matcher: SectionMatcher,
    new_ids: Collection[str],
    floor: float,
) -> list[Unit]:
    """Sections of the contributors that are on the axis: about a paper, close to the profile or to a section."""
    out: list[Unit] = []
    for doc, rel in contributors:
        for u in units_of(doc, axis, rel.stars, rel.score):
            text = f"{u.heading}\n{u.text}"
            if u.primary_ids or space.score_text(text, axis) >= floor or matcher.similar(text, 1):
                out.append(u)
            out.extend(mention_units(u, [i for i in u.ids if i in new_ids]))
    return out


Loader = Callable[[Sequence[str]], Sequence[Document]]


def _whole(docs: Iterable[DocumentSummary], load: Loader | None) -> dict[str, Document]:
    """path → the whole document, loading those given only as summaries (a vanished one is left out)."""
    out = {d.path: d for d in docs if isinstance(d, Document)}
    missing = list(dict.fromkeys(d.path for d in docs if not isinstance(d, Document) and d.path not in out))
    if missing:
        if load is None:
            raise ValueError(f"{len(missing)} summaries need their text, but no loader was given")
        out.update((d.path, d) for d in load(missing))
    return out


def _stated_titles(doc: DocumentSummary) -> Sequence[TitledId]:
    if doc.titled or not isinstance(doc, Document):
        return doc.titled
    return titled_ids(doc)  # a record parsed before summaries carried them


def _most_relevant(
    eligible: Sequence[tuple[DocumentSummary, Relevance]], axis: str, limit: int
) -> list[tuple[DocumentSummary, Relevance]]:
    """The `limit` most relevant sources, cards anchored into the axis first, in their original order."""
    ranked = sorted(eligible, key=lambda dr: (not card_anchors(dr[0], axis), -dr[1].score, dr[0].path))
    chosen = {d.path for d, _ in ranked[:limit]}
    return [(d, r) for d, r in eligible if d.path in chosen]


def assemble_briefing(
    *,
    axis: AxisSpec,
    trigger: Trigger,
    window: WindowBounds,
    generated_at: datetime,
    documents: Sequence[DocumentSummary],
    living: Document | None,
    earlier_cited_ids: Collection[str],
    axes: Sequence[AxisSpec] = (),
    other_living: Mapping[str, Document | None] | None = None,
    superseded: Sequence[DocumentSummary] = (),
    rejected: Sequence[Rejection] = (),
    increment_range: tuple[int, int] = (3, 8),
    last_d_number: int = 0,
    zone: ZoneInfo,
    lang: Lang = "zh",
    rules: BriefingRules | None = None,
    arxiv_records: Mapping[str, EnrichedId] = NO_RECORDS,
    near_duplicate_threshold: float = 0.8,
    load: Loader | None = None,
) -> Briefing:
    """Build the briefing of one axis window from the current documents of that window.

    `documents` may be summaries: the ones that can feed increments are then fetched whole with `load`.
    """
    rules = rules or BriefingRules()
    inc_rules = rules.increments.model_copy(
        update={"min_count": increment_range[0], "max_count": increment_range[1]}
    )
    all_axes = list(axes) or [axis]
    if axis.name not in {a.name for a in all_axes}:
        all_axes.append(axis)

    def belongs(d: DocumentSummary) -> bool:
        own_baseline = d.kind == "baseline" and d.baseline_axis == axis.name and d.event_time < window.end
        return d.kind != "living" and (in_window(d.event_time, window) or own_baseline)

    docs = sorted((d for d in documents if belongs(d)), key=lambda d: (d.event_time, d.path))
    duplicates = window_duplicates(docs, near_duplicate_threshold)
    kept = [d for d in docs if d.path not in duplicates]

    living_map = dict(other_living or {})
    living_map[axis.name] = living
    space = AxisSpace(kept, all_axes, living_map)
    scores = {d.path: space.scores(d) for d in docs}
    rel = {d.path: relevance(d, axis.name, scores[d.path], rules.relevance) for d in docs}
    low = {d.path for d in docs if is_low(rel[d.path], rules.relevance)}

    living_doc = parse_living_doc(living) if living is not None else None
    anchored: set[str] = set(earlier_cited_ids) | (set(living_doc.cited_ids) if living_doc else set())
    own_baselines = [d for d in kept if rel[d.path].label == "基线"]
    for d in own_baselines:
        anchored.update(d.arxiv_ids)
    eligible = [
        (d, rel[d.path])
        for d in kept
        if d.kind in ("inbox", "paper_card") and rel[d.path].label not in _ROLES and d.path not in low
    ]
    needed = _most_relevant(eligible, axis.name, inc_rules.max_contributors)
    queues = [d for d in kept if d.kind == "work_queue"]
    full = _whole([*(d for d, _ in needed), *own_baselines, *queues], load)
    contributors = [(full[d.path], r) for d, r in needed if d.path in full]
    window_ids = list(
        dict.fromkeys(i for d in [*(c for c, _ in eligible), *own_baselines] for i in d.arxiv_ids)
    )
    new_ids = [i for i in window_ids if i not in anchored]
    continued_ids = [i for i in window_ids if i in anchored]

    # Titles as the notes state them, from the notes that can feed the briefing: over every note of a
    # 100k window this alone would take minutes.
    baselines = [full[d.path] for d in own_baselines if d.path in full]
    # Titles the notes state for their ids come with their summaries (parsed once), so a typo'd id is
    # caught wherever it sits in the window; lead words before ids, from the notes read whole, fill in.
    pairs = [p for d in [*kept, *([living] if living else [])] for p in _stated_titles(d)]
    readers = [*baselines, *([living] if living else []), *(d for d, _ in contributors)]
    titles = best_titles([*pairs, *(p for d in readers for p in inline_names(d))])
    titles.update({i: e.record.title for i, e in arxiv_records.items()})  # the API is authoritative
    verified = {i: i in arxiv_records for i in window_ids} if arxiv_records else {}
    matcher = SectionMatcher(living_doc, space.vector_of_text)
    id_items = dx.id_conflicts(pairs, lang)
    hits = dx.future_id_hits([d for d in kept if d.kind in ("inbox", "paper_card")], zone)
    future_items = dx.future_ids(hits, _whole([d for d, _ in hits], load), zone, lang)
    # A new id titled like an anchored one, or dated after its note, is most likely a typo: a D-item,
    # never an increment.
    suspect = {i for item in id_items for i in dx.ids_of(item) if i in new_ids and dx.ids_of(item) & anchored}
    suspect |= {i for item in future_items for i in dx.ids_of(item)}
    ctx = Context(
        axis=axis.name,
        vectorise=space.vector_of_text,
        score_text=lambda text: space.score_text(text, axis.name),
        new_ids=set(new_ids) - suspect,
        matcher=matcher,
        living_text=living.text if living else "",
        titles=titles,
        verified=verified,
        credibility=rules.credibility,
        lang=lang,
    )
    units = _units(contributors, axis.name, space, matcher, set(new_ids), inc_rules.relevance_floor)
    clusters = [c for c in cluster_units(units, ctx, inc_rules) if not (c.ids and set(c.ids) <= suspect)]
    candidates = [evaluate(c, ctx, inc_rules) for c in clusters]
    chosen = select(candidates, inc_rules)
    increments = [build(c, rank, ctx, inc_rules) for rank, c in enumerate(chosen, start=1)]
    used = {u.doc_path for c in chosen for u in c.cluster.units}
    candidate_docs = {u.doc_path for c in candidates for u in c.cluster.units}

    queue = {
        name: n
        for d in queues
        if d.path in full
        for name, n in work_queue_items(full[d.path], [a.name for a in all_axes]).items()
    }
    sources: list[SourceEntry] = []
    no_inc: list[NoIncrementSource] = []
    for d in docs:
        if d.path in used:
            sources.append(source_entry(d, axis.name, rel[d.path], "used", None, lang))
            continue
        dup = duplicates.get(d.path)
        sources.append(
            source_entry(d, axis.name, rel[d.path], "duplicate" if dup else "no_increment", dup, lang)
        )
        no_inc.append(
            no_increment(
                d,
                axis=axis.name,
                rel=rel[d.path],
                duplicate=dup,
                low=d.path in low,
                other_axis=_other_axis(d, axis.name, scores[d.path]),
                anchored=anchored,
                had_candidates=d.path in candidate_docs,
                selected=len(increments),
                lang=lang,
                queue_items=queue,
            )
        )
    for d in sorted(superseded, key=lambda d: (d.event_time, d.path)):
        if in_window(d.event_time, window):
            s_rel = relevance(d, axis.name, space.scores(d), rules.relevance)
            sources.append(source_entry(d, axis.name, s_rel, "superseded", None, lang))

    where = {
        u.ref: inc.suggested_sections[0]
        for c, inc in zip(chosen, increments, strict=True)
        for u in c.cluster.units
        if inc.suggested_sections
    }
    chosen_units = [u for c in chosen for u in c.cluster.units]
    items = [
        *dx.version_conflicts(units, living_doc, lang),
        *id_items,
        *future_items,
        # Flagged and unsourced claims of what goes into the living document tonight, not of every note.
        *dx.flagged_and_unsourced(chosen_units, where, lang),
    ]
    discrepancies = dx.number_items(items, last_d_number)

    by_id = {i: inc for inc in increments for i in inc.arxiv}
    arxiv = [
        ArxivEntry(
            id=i,
            title=titles.get(i, i),
            status="new" if i in new_ids else "continued",
            credibility=assess(
                ids=[i],
                urls=[],
                titles=[],
                supporting_docs=1,
                flagged=False,
                verified=verified.get(i),
                rules=rules.credibility,
                lang=lang,
            ).text,
            sections=by_id[i].suggested_sections
            if i in by_id
            else (sections_citing(living_doc, i) if living_doc else []),
            metadata=arxiv_records[i].metadata() if i in arxiv_records else ArxivMetadata(source="document"),
        )
        for i in window_ids
    ]
    return Briefing(
        axis=axis.name,
        trigger=trigger,
        generated_at=generated_at,
        window=window,
        living_doc=LivingDocRef(
            path=axis.living_doc or (living.path if living else None),
            version=living.version if living else None,
            sections={section_label(s): section_title(s) for s in living_doc.sections} if living_doc else {},
        ),
        summary=Summary(
            increment_count=len(increments),
            target_range=increment_range,
            new_arxiv=new_ids,
            continued_arxiv=continued_ids,
        ),
        sources=sources,
        increments=increments,
        discrepancies=discrepancies,
        arxiv=arxiv,
        no_increment_sources=no_inc,
        priorities=priorities(increments, discrepancies, lang),
        rejected=list(rejected),
    )


def cited_ids_of(briefing: Briefing) -> set[str]:
    """Every arXiv id a briefing mentions (the next window's `earlier_cited_ids`)."""
    ids = set(briefing.summary.new_arxiv) | set(briefing.summary.continued_arxiv)
    ids.update(e.id for e in briefing.arxiv)
    ids.update(i for inc in briefing.increments for i in inc.arxiv)
    return ids


def max_d_number(texts: Iterable[str]) -> int:
    """The highest D number (`D199`) found in the texts, 0 if none."""
    return max((int(m) for t in texts for m in _D_NUMBER.findall(t)), default=0)
