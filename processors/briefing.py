"""Assemble the v1 briefing of one axis window: named stages, each a small frozen result, from one request."""

from __future__ import annotations

from processors import discrepancies as dx
from processors.anchoring import anchor_ids, split_ids
from processors.arxiv_list import IdListing, arxiv_entries
from processors.briefing_request import BriefingRequest
from processors.contributors import gather_contributors, read_whole
from processors.id_titles import window_titles
from processors.increment_search import find_increments
from processors.increments import Context
from processors.living_doc import LivingDoc, SectionMatcher, section_label, section_title
from processors.models import Briefing, LivingDocRef, Summary
from processors.priorities import priorities
from processors.relevance import weigh_sources
from processors.sources import AccountContext, account_sources, queue_counts, superseded_entries
from processors.window_set import collect_window


def _living_doc_ref(req: BriefingRequest, living: LivingDoc | None) -> LivingDocRef:
    """The living document the briefing was weighed against: its path, version and sections."""
    return LivingDocRef(
        path=req.axis.living_doc or (req.living.path if req.living else None),
        version=req.living.version if req.living else None,
        sections={section_label(s): section_title(s) for s in living.sections} if living else {},
    )


def assemble_briefing(req: BriefingRequest) -> Briefing:
    """Build the briefing of one axis window from the current documents of that window."""
    rules, axis, lang = req.rules, req.axis.name, req.lang
    inc_rules = rules.increments
    window = collect_window(req.documents, axis, req.window, rules.near_duplicate_threshold)
    weights = weigh_sources(
        window.docs, window.kept, axis, (req.all_axes, req.living_map), rules.relevance, lang
    )
    anchors = anchor_ids(window.kept, weights.rel, req.living, req.history.cited_ids)
    queues = [d for d in window.kept if d.kind == "work_queue"]
    found_whole = gather_contributors(
        window.kept, weights, [*anchors.baselines, *queues], req.load, (axis, inc_rules.max_contributors)
    )
    # 四 lists every id of the window: the contributors' first, then the baselines', then the other sources'
    # (adjacent, reference, low, duplicate), each new or continued against what the axis already cites.
    ids = split_ids([*(d for d, _ in found_whole.eligible), *anchors.baselines, *window.docs], anchors.ids)

    api_titles = {i: e.record.title for i, e in req.arxiv_records.items()}
    titles = window_titles([*window.kept, *([req.living] if req.living else [])], api_titles, ids.window)
    notes = [d for d in window.kept if d.kind in ("inbox", "paper_card")]
    screening = dx.screen_ids(
        # The living document's titles are among those stated, the earlier briefings' come with the history:
        # a note citing a paper under another id than they do is a D-item, and the id not a new paper.
        [*titles.stated, *req.history.titles],
        notes,
        lambda docs: read_whole(docs, req.load),
        (ids.new, anchors.ids, anchors.living.cited_ids if anchors.living else ()),
        (req.zone, lang),
    )

    matcher = SectionMatcher(anchors.living, weights.space.vector_of_text)
    ctx = Context(
        axis=axis,
        vectorise=weights.space.vector_of_text,
        vectorise_parts=weights.space.vector_of_parts,
        new_ids=set(ids.new) - screening.suspect,
        matcher=matcher,
        living_text=req.living.text if req.living else "",
        titles=titles.best,
        verified=titles.verified,
        credibility=rules.credibility,
        lang=lang,
    )
    found = find_increments(found_whole.chosen, ctx, weights.space, (ids.new, screening.suspect), inc_rules)

    queue = queue_counts(
        [found_whole.whole[d.path] for d in queues if d.path in found_whole.whole], req.all_axes
    )
    accounts = account_sources(window, weights, found, AccountContext(axis, anchors.ids, queue, lang))
    superseded = superseded_entries(req.superseded, req.window, weights, axis, lang)

    items = [
        *dx.version_conflicts(found.units, anchors.living, lang),
        *screening.id_items,
        *screening.future_items,
        # Flagged and unsourced claims of what goes into the living document tonight, not of every note.
        *dx.flagged_and_unsourced(found.chosen_units, found.suggested_section_of_units(), lang),
    ]
    discrepancies = dx.number_items(items, req.history.numbers)
    listing = IdListing(titles, found.increments, anchors.living, req.arxiv_records, rules.credibility, lang)
    return Briefing(
        axis=axis,
        trigger=req.trigger,
        generated_at=req.generated_at,
        window=req.window,
        living_doc=_living_doc_ref(req, anchors.living),
        summary=Summary(
            increment_count=len(found.increments),
            target_range=(inc_rules.min_count, inc_rules.max_count),
            new_arxiv=ids.new,
            continued_arxiv=ids.continued,
        ),
        sources=[*accounts.sources, *superseded],
        increments=found.increments,
        discrepancies=discrepancies,
        arxiv=dx.mark_suspects(arxiv_entries(ids, listing), discrepancies, screening.suspect, lang),
        no_increment_sources=accounts.no_increment,
        priorities=priorities(found.increments, discrepancies, lang),
        rejected=list(req.rejected),
    )
