"""Assemble the v1 briefing of one axis window: named stages, each a small frozen result, from one request."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from processors import discrepancies as dx
from processors.anchoring import Anchors, IdSplit, anchor_ids, anchored_by
from processors.arxiv_list import IdListing, arxiv_entries
from processors.briefing_request import BriefingRequest, Loader
from processors.contributors import read_whole
from processors.damaged_notes import refill_past_damage, unplaced_past_damage
from processors.id_conflicts import conflicts_among
from processors.id_titles import WindowTitles, stated_titles, window_titles
from processors.increment_search import find_increments
from processors.increments import Context
from processors.living_doc import LivingDoc, SectionMatcher, section_label, section_title
from processors.models import Briefing, Document, LivingDocRef, Summary
from processors.near_duplicates import DuplicateOf
from processors.priorities import priorities
from processors.relevance import AxisSpace, Scorer
from processors.sources import AccountContext, SourceListing, queue_counts, superseded_entries
from processors.window_rows import SourceRow, StatedTitles, WindowSource
from processors.window_scan import Scan, ScanLimits, scan_window
from processors.window_set import MemoryWindow

# Rows of the window's scan between two calls of `between_reads`: the blocks DuckDB cached for them (~10 MiB at
# 100k sources) are evicted as the scan goes, not held beside its listing.
SHED_ROWS = 20_000
# Rows between two looks at the build's stop (`BriefingRequest.go_on`): ~0.1 s of a 100k window's scan.
GO_ON_ROWS = 5_000
# Contributors ranked beyond `max_contributors` in the first read, at least this many: as many as the slots, so
# that even every contributor found damaged costs reads of a few notes, not a second scan of the window.
MIN_RESERVE = 8


def _living_doc_ref(req: BriefingRequest, living: LivingDoc | None) -> LivingDocRef:
    """The living document the briefing was weighed against: its path, version and sections."""
    return LivingDocRef(
        path=req.axis.living_doc or (req.living.path if req.living else None),
        version=req.living.version if req.living else None,
        sections={section_label(s): section_title(s) for s in living.sections} if living else {},
    )


def _window(req: BriefingRequest) -> WindowSource:
    """The window as rows: the stored one the request names, or the documents it holds."""
    if req.source is not None:
        return req.source
    return MemoryWindow(req.documents, req.superseded, (req.axis.name, req.window), req.all_axes)


@dataclass(frozen=True)
class WindowReads:
    """What a briefing reads from its window, its reads over: the rest (`briefing_of`) reads nothing more."""

    space: AxisSpace
    scorer: Scorer
    listed: SourceListing
    superseded: list[SourceRow]
    scan: Scan
    anchors: Anchors
    whole: Mapping[str, Document]
    stated: StatedTitles
    size: int
    lost: frozenset[str] = frozenset()  # the notes read whole that did not read back (damaged)
    # Contributors' slots damaged notes freed that the reserve could not fill, sources ranked below it; and
    # whether the window was read again for them.
    unfilled: int = 0
    read_again: bool = False


def _shedding(rows: Iterable[SourceRow], req: BriefingRequest) -> Iterator[SourceRow]:
    """The rows, `between_reads` called after every SHED_ROWS of them (the scan's reader waiting meanwhile), the
    build's stop looked at after every GO_ON_ROWS."""
    for n, row in enumerate(rows, 1):
        yield row
        if n % GO_ON_ROWS == 0:
            req.go_on()
        if n % SHED_ROWS == 0:
            req.between_reads()


def assemble_briefing(req: BriefingRequest) -> Briefing:
    """Build the briefing of one axis window from the current documents of that window."""
    return briefing_of(req, read_window(req))


def read_window(req: BriefingRequest) -> WindowReads:
    """Every read a briefing makes of its window (`briefing_of` makes the rest from them).

    The window is read once, row by row (`processors.window_rows`): each source is weighed and listed, and what
    the later stages quote is kept; only those few sources are read whole.
    """
    reads = _read_once(req, None)
    # The damage shows only at the whole read, once the window was weighed: a contributor's slot a damaged note
    # frees goes to the next of the reserve ranked with them (`refill_past_damage`). Only when more slots were
    # freed than it holds is the window read again (a scan costs ~+45 % of the briefing), once, weighed as the
    # first read was, the damaged notes ranked nowhere; the notes already read are not read again.
    if reads.unfilled:
        past = _Past(reads.listed.duplicates, reads.lost, reads.whole, reads.space)
        del reads
        reads = replace(_read_once(replace(req, load=past.loader(req.load)), past), read_again=True)
    return reads


@dataclass(frozen=True)
class _Past:
    """What a read of the window found: its duplicate groups settled past the damaged notes, those notes (`lost`),
    the notes it read whole, and its weights."""

    duplicates: Mapping[str, DuplicateOf]
    lost: frozenset[str]
    whole: Mapping[str, Document]
    space: AxisSpace

    def loader(self, load: Loader | None) -> Loader:
        """A loader that reads none of the notes read whole already, nor the damaged ones again."""
        whole, lost = dict(self.whole), self.lost

        def known(paths: Sequence[str]) -> list[Document]:
            wanted = [p for p in paths if p not in whole and p not in lost]
            return [*(whole[p] for p in paths if p in whole), *(load(wanted) if wanted and load else ())]

        return known


def _read_once(req: BriefingRequest, past: _Past | None) -> WindowReads:
    """`read_window`'s reads; after a `past` read that met damaged notes, weighed as it was, those ranked nowhere."""
    rules, axis, lang = req.rules, req.axis.name, req.lang
    source = _window(req)
    if past is None:
        duplicates, lost = source.duplicates(rules.near_duplicate_threshold), frozenset[str]()
        # A damaged note's stored terms (read at ingest, whole) stay weighed: leaving them out would take a scan.
        req.go_on()
        space = AxisSpace.of(source.statistics(duplicates.keys()), req.all_axes, req.living_map)
    else:
        duplicates, lost, space = dict(past.duplicates), past.lost, past.space
    scorer = Scorer(space, axis, rules.relevance, lang)
    req.go_on()
    superseded = source.superseded(space.profile_terms)
    req.go_on()
    listed = SourceListing(duplicates, axis, lang)
    slots = rules.increments.max_contributors
    limits = ScanLimits(
        slots, req.zone, {r.doc.path for r in superseded}, lost, reserve=max(slots, MIN_RESERVE)
    )
    # The scan builds a listing per source (~200 MiB at 100k) while it reads: what the store cached for the reads
    # before it (and then for the scan itself) is not held beside it.
    req.between_reads()
    scan = scan_window(_shedding(source.rows(space.profile_terms), req), listed, scorer, limits)
    req.between_reads()
    anchors = anchor_ids(scan.baselines, req.living, req.history.cited_ids)
    # Every note read whole in one read: the notes that date an id after themselves too. Each read of a stored
    # window's bodies costs a pass over all of them (~0.5 s at 100k: their compression is per ~2k rows).
    future = [d for d, _ in scan.future]
    whole = read_whole(
        [*(d for d, _ in scan.contributors), *anchors.baselines, *scan.queues, *future], req.load
    )
    # A note that did not read back (the request lists it damaged) is left out of everything the briefing quotes
    # or counts; a duplicate of it takes its place (`processors.damaged_notes`), the reserve its slot.
    lost = refill_past_damage(scan, listed, whole, (req.load, req.zone), (axis, slots))
    if lost:  # a damaged baseline anchors nothing; its readable copy, as it would alone
        anchors = anchored_by(scan.baselines, anchors.living, req.history.cited_ids)
    dups = listed.duplicates.keys()
    stated = source.titles(dups | lost if lost else dups)
    unfilled = slots - len(scan.contributors) if lost and scan.cut is not None and not scan.reserve else 0
    return WindowReads(
        space, scorer, listed, superseded, scan, anchors, whole, stated, source.size(), lost, max(unfilled, 0)
    )


def briefing_of(req: BriefingRequest, read: WindowReads) -> Briefing:
    """The briefing made from its window's reads: increments, accounts, D-items, ids, priorities."""
    rules, axis, lang = req.rules, req.axis.name, req.lang
    inc_rules = rules.increments
    space, scan, anchors, whole = read.space, read.scan, read.anchors, read.whole
    # A stop need not wait for the build's end (seconds at 100k): it ends at the next of these steps.
    req.go_on()
    chosen = [(whole[d.path], r) for d, r in scan.contributors if d.path in whole]
    # 四 lists every id of the window: the contributors' first, then the baselines', then the other sources'
    # (adjacent, reference, low, duplicate), each new or continued against what the axis already cites.
    ids = scan.ids.split(anchors.ids)
    titles, screening = _titles_and_screening(req, (scan, read.stated, whole), ids, anchors, read.size)
    req.go_on()

    matcher = SectionMatcher(anchors.living, space.vector_of_text)
    ctx = Context(
        axis=axis,
        vectorise=space.vector_of_text,
        vectorise_parts=space.vector_of_parts,
        new_ids=set(ids.new) - screening.suspect,
        matcher=matcher,
        living_text=req.living.text if req.living else "",
        titles=titles.best,
        verified=titles.verified,
        credibility=rules.credibility,
        lang=lang,
    )
    found = find_increments(chosen, ctx, space, (ids.new, screening.suspect), inc_rules)
    increments = unplaced_past_damage(found.increments, req.unread_code(req.axis.living_doc))
    req.go_on()

    queue = queue_counts([whole[d.path] for d in scan.queues if d.path in whole], req.all_axes)
    # A note whose stored text did not read back is listed among the rejected (damaged), not as a source too.
    accounts = read.listed.accounts(found, AccountContext(axis, anchors.ids, queue, lang, req.go_on)).without(
        req.damaged
    )
    req.go_on()
    replaced = superseded_entries(read.superseded, scan.current, req.window, read.scorer)
    req.go_on()

    items = [
        *dx.version_conflicts(found.units, anchors.living, lang),
        *screening.id_items,
        *screening.future_items,
        # Flagged and unsourced claims of what goes into the living document tonight, not of every note.
        *dx.flagged_and_unsourced(found.chosen_units, found.suggested_section_of_units(), lang),
    ]
    discrepancies = dx.number_items(items, req.history.numbers)
    listing = IdListing(titles, increments, anchors.living, req.arxiv_records, rules.credibility, lang)
    req.go_on()
    return Briefing(
        axis=axis,
        trigger=req.trigger,
        generated_at=req.generated_at,
        window=req.window,
        living_doc=_living_doc_ref(req, anchors.living),
        summary=Summary(
            increment_count=len(increments),
            target_range=(inc_rules.min_count, inc_rules.max_count),
            new_arxiv=ids.new,
            continued_arxiv=ids.continued,
        ),
        sources=[*accounts.sources, *replaced],
        increments=increments,
        discrepancies=discrepancies,
        arxiv=dx.mark_suspects(arxiv_entries(ids, listing), discrepancies, screening.suspect, lang),
        no_increment_sources=accounts.no_increment,
        priorities=priorities(increments, discrepancies, lang),
        rejected=list(req.rejected),
    )


def _titles_and_screening(
    req: BriefingRequest,
    read: tuple[Scan, StatedTitles, Mapping[str, Document]],
    ids: IdSplit,
    anchors: Anchors,
    size: int,
) -> tuple[WindowTitles, dx.Screening]:
    """The title of each id, and the ids screened: titled like another (a typo) or dated after their note."""
    scan, stated, whole = read
    # The living document's titles are among those stated, the earlier briefings' come with the history:
    # a note citing a paper under another id than they do is a D-item, and the id not a new paper.
    living_titles = stated_titles(req.living) if req.living else ()
    stated.best.add(living_titles, size)  # after the window's titles, the history's last
    stated.pairs.add(living_titles, size)
    stated.pairs.add(req.history.titles, size + 1)
    api_titles = {i: e.record.title for i, e in req.arxiv_records.items()}
    titles = window_titles(stated.best, api_titles, ids.window)
    screening = dx.screen(
        conflicts_among(stated.pairs.pairs, req.lang),
        scan.future,
        lambda docs: {d.path: whole[d.path] for d in docs if d.path in whole},
        (ids.new, anchors.ids, anchors.living.cited_ids if anchors.living else ()),
        (req.zone, req.lang),
    )
    return titles, screening
