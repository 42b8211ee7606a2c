"""A briefing's first read of the window: each source weighed once, and only what the later stages quote kept.

Of a window of any size it keeps the axis's baselines and work queues, the most relevant sources that can feed
increments (`Contributors`), the window's ids in listing order, and the ids some note dates after itself:
summaries of a few dozen sources, not of the window. (The titles stated for the ids come apart, as rows of
their own: `WindowSource.titles`.)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from processors.anchoring import IdOrder
from processors.arxiv_ids import yymm
from processors.contributors import Contributors, RankKey, can_contribute
from processors.discrepancies import future_id_hits
from processors.models import DocumentSummary, Relevance
from processors.relevance import Scorer
from processors.sources import SourceListing
from processors.window_rows import SourceRow


@dataclass(frozen=True)
class ScanLimits:
    """How many contributors to keep, the zone that dates ids, and the paths whose kept source to note."""

    contributors: int
    zone: ZoneInfo
    watched: Collection[str] = ()  # the paths of superseded versions: they are weighed as their note
    lost: Collection[str] = ()  # notes found damaged by an earlier read: held for its checks, ranked nowhere
    reserve: int = 0  # how many contributors to hold beyond `contributors`, for the slots damaged ones free


@dataclass
class Scan:
    """What the read kept: the few sources the briefing reads whole, and the window's ids."""

    baselines: list[DocumentSummary] = field(default_factory=list)  # this axis's own, kept
    queues: list[DocumentSummary] = field(default_factory=list)  # the window's work queues, kept
    contributors: list[tuple[DocumentSummary, Relevance]] = field(default_factory=list)
    ids: IdOrder = field(default_factory=IdOrder)
    future: list[tuple[DocumentSummary, str]] = field(default_factory=list)  # (note, an id dated after it)
    current: dict[str, SourceRow] = field(default_factory=dict)  # kept sources at the `watched` paths
    at: dict[str, int] = field(default_factory=dict)  # the place of each note kept above
    # The next contributors (place, note, relevance), the most relevant first, not read whole unless a slot is
    # freed; and, when sources that could contribute were ranked below even those, the last one's key.
    reserve: list[tuple[int, DocumentSummary, Relevance]] = field(default_factory=list)
    cut: RankKey | None = None


def scan_window(
    rows: Iterable[SourceRow],
    listing: SourceListing,
    scorer: Scorer,
    limits: ScanLimits,
) -> Scan:
    """Read every source once (in any order: each row knows its place), listing each in `listing`; duplicates
    (the listing's) feed nothing."""
    duplicates = listing.duplicates
    scan = Scan()
    ranking = Contributors(scorer.axis, limits.contributors, limits.reserve)
    baselines: list[tuple[int, DocumentSummary]] = []
    queues: list[tuple[int, DocumentSummary]] = []
    future: list[tuple[int, DocumentSummary, str]] = []
    lost: list[tuple[int, DocumentSummary]] = []
    for row in rows:
        doc, position = row.doc, row.position
        scores, rel = scorer.weigh(row)
        listing.add(row, scores, rel)
        kept = doc.path not in duplicates
        eligible = kept and can_contribute(doc, rel)
        baseline = kept and rel.code == "baseline"
        scan.ids.add(position, doc, eligible=eligible, baseline=baseline)
        if not kept:
            continue
        if doc.path in limits.watched:
            scan.current[doc.path] = row
        if doc.path in limits.lost:
            lost.append((position, doc))  # its slot among the contributors goes to the next
        elif eligible:
            ranking.offer(position, doc, rel)
        if baseline:
            baselines.append((position, doc))
        if doc.kind == "work_queue":
            queues.append((position, doc))
        if doc.kind in ("inbox", "paper_card") and cites_later(doc, limits.zone):
            future.extend((position, d, i) for d, i in future_id_hits([doc], limits.zone))
    ranked = ranking.ranked()
    scan.contributors = [(d, r) for _, d, r in ranked]
    scan.reserve, scan.cut = ranking.reserve(), ranking.cut()
    scan.baselines = [d for _, d in sorted(baselines, key=lambda e: e[0])]
    scan.queues = [d for _, d in sorted(queues, key=lambda e: e[0])]
    scan.future = [(d, i) for _, d, i in sorted(future, key=lambda e: e[0])]
    held = [*((p, d) for p, d, _ in ranked), *baselines, *queues, *((p, d) for p, d, _ in future), *lost]
    scan.at = {d.path: p for p, d in held}
    return scan


def cites_later(doc: DocumentSummary, zone: ZoneInfo) -> bool:
    """Whether the note cites an id of a month after its own: the few `future_id_hits` looks at closely."""
    latest = max(filter(None, map(yymm, doc.arxiv_ids)), default=None)
    if latest is None:
        return False
    local = doc.event_time.astimezone(zone)
    return latest > (local.year, local.month)
