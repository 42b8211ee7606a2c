"""The notes a briefing reads whole that do not read back (damaged): listed among its rejected only, so nothing
else of the briefing quotes or counts them, and a duplicate of one takes its place.

The damage shows only at the whole read, once the window's duplicate groups are settled: a group whose kept note
does not read back is kept by its earliest member that does, read whole in turn (rare: one more read), and a
contributor's slot it frees goes to the next of the scan's reserve, read whole in turn too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from zoneinfo import ZoneInfo

from processors.briefing_request import Loader
from processors.contributors import RankKey, can_contribute, rank_key, read_whole
from processors.discrepancies import future_id_hits
from processors.models import Document, Increment, Relevance, UnplacedReason
from processors.near_duplicates import DuplicateOf
from processors.reasons import RejectionCode
from processors.sources import SourceListing
from processors.window_scan import Scan, cites_later

# Why a living document stored but not read back places nothing, whatever its rejection code: a worker of the
# release before reads the increments of every briefing recorded for its axis (`earlier_briefings`) and refuses a
# code it does not know, so after a rollback a new one would fail each of that axis's briefings. The Markdown
# tells a missing row from a damaged body by the living document's rejected entry (`render_markdown`).
_UNPLACED: UnplacedReason = "living_document_damaged"


def regroup(
    duplicates: Mapping[str, DuplicateOf], lost: Collection[str], at: Mapping[str, int]
) -> tuple[dict[str, DuplicateOf], dict[str, str]]:
    """The duplicates with each group whose kept note is `lost` kept by its earliest member not lost (places
    `at`), the rest its duplicates, the lost members no one's; and each such lost note → the member kept."""
    groups: dict[str, list[str]] = {}
    for path, dup in duplicates.items():
        if dup.kept in lost:
            groups.setdefault(dup.kept, []).append(path)
    if not groups:
        return dict(duplicates), {}
    out = {p: d for p, d in duplicates.items() if d.kept not in groups}
    heirs: dict[str, str] = {}
    for kept, members in groups.items():
        readable = sorted((m for m in members if m not in lost), key=at.__getitem__)
        if readable:
            heir, *rest = readable
            heirs[kept] = heir
            out.update((m, _repointed(duplicates[m], (heir, duplicates[heir]), lost)) for m in rest)
    return out, heirs


def _repointed(dup: DuplicateOf, heir: tuple[str, DuplicateOf], lost: Collection[str]) -> DuplicateOf:
    """`dup` as a duplicate of `heir`, which duplicated their lost kept note: two exact copies of that note are
    exact copies of each other; a near one keeps the similarity measured against the lost note (the pair's own
    was never measured), an exact one of a near heir takes the heir's."""
    path, of_lost = heir
    matched = path if dup.matched in lost else dup.matched
    if of_lost.kind == "exact" or dup.kind == "near":
        return DuplicateOf(kept=path, kind=dup.kind, similarity=dup.similarity, matched=matched)
    return DuplicateOf(kept=path, kind="near", similarity=of_lost.similarity, matched=matched)


def read_past_damage(
    scan: Scan, listed: SourceListing, whole: dict[str, Document], read: tuple[Loader | None, ZoneInfo]
) -> frozenset[str]:
    """The notes the scan kept that did not read back into `whole`, with any duplicate that took the place of
    one and did not read back either; the listing's duplicates regrouped past them, `whole` gaining the ones
    that took their place, the scan having those in it (`take_places`). `read`: the loader, the zone."""
    load, zone = read
    lost = {p for p in scan.at if p not in whole}
    if not lost or load is None:
        return frozenset()
    duplicates = listed.duplicates
    standing = listed.standing({p for p, d in duplicates.items() if d.kept in lost})
    while True:
        kept, heirs = regroup(duplicates, lost, {p: at for p, (at, _) in standing.items()})
        wanted = [h for h in heirs.values() if h not in whole]
        if not wanted:
            break
        whole.update((d.path, d) for d in load(wanted))
        lost.update(h for h in wanted if h not in whole)
    listed.duplicates = kept
    for h in heirs.values():
        listed.keep(whole[h], standing[h][1])
    scan.at.update((p, at) for p, (at, _) in standing.items() if p in lost)  # its ids dropped too
    take_places(scan, {was: (whole[h], *standing[h]) for was, h in heirs.items()}, lost, zone)
    return frozenset(lost)


def refill_past_damage(
    scan: Scan,
    listed: SourceListing,
    whole: dict[str, Document],
    read: tuple[Loader | None, ZoneInfo],
    ranking: tuple[str, int],
) -> frozenset[str]:
    """`read_past_damage`, then the contributors chosen again: the `ranking`'s (axis, slots) most relevant of
    those left and of the scan's reserve (a readable copy of a damaged one at its own rank), those newly chosen
    read whole (one read per round); the notes found damaged."""
    axis, slots = ranking
    lost = read_past_damage(scan, listed, whole, read)
    while lost:
        at = scan.at
        pool = [*((at[d.path], d, r) for d, r in scan.contributors), *scan.reserve]
        # A copy ranked past the scan's cut may rank below a source it held no room for: left to a second read.
        pool = sorted(
            (e for e in pool if e[1].path not in lost and _within(rank_key(axis, e[1], e[2]), scan.cut)),
            key=lambda e: rank_key(axis, e[1], e[2]),
        )
        chosen, scan.reserve = pool[:slots], pool[slots:]
        at.update((d.path, p) for p, d, _ in chosen)
        scan.contributors = sorted(((d, r) for _, d, r in chosen), key=lambda e: at[e[0].path])
        wanted = [d for _, d, _ in chosen if d.path not in whole]
        if not wanted:
            break
        whole.update(read_whole(wanted, read[0]))
        lost = read_past_damage(scan, listed, whole, read)
    return lost


def _within(key: RankKey, cut: RankKey | None) -> bool:
    """Whether a source of this ranking key surely ranks above every one the scan did not hold."""
    return cut is None or key <= cut


def take_places(
    scan: Scan, heirs: Mapping[str, tuple[Document, int, Relevance]], lost: Collection[str], zone: ZoneInfo
) -> None:
    """The scan with each lost note's readable duplicate (`heirs`: lost note → it, its place, its relevance) in
    its place, as the scan would have kept it, and the lost notes gone from it: their ids in 四 (and as anchors,
    a baseline's) and their dates of ids in D-items."""
    contributors = {d.path for d, _ in scan.contributors}
    queues, baselines = {d.path for d in scan.queues}, {d.path for d in scan.baselines}
    for was, (doc, position, rel) in heirs.items():
        scan.at[doc.path] = position
        eligible, baseline = can_contribute(doc, rel), rel.code == "baseline"
        scan.ids.promote(position, eligible=eligible, baseline=baseline)
        if eligible and was in contributors:
            scan.contributors.append((doc, rel))
        if baseline and was in baselines:
            scan.baselines.append(doc)
        if doc.kind == "work_queue" and was in queues:
            scan.queues.append(doc)
        if doc.kind in ("inbox", "paper_card") and cites_later(doc, zone):
            scan.future.extend(future_id_hits([doc], zone))
    scan.ids.drop({scan.at[p] for p in lost})
    at = scan.at
    scan.contributors = sorted(
        (e for e in scan.contributors if e[0].path not in lost), key=lambda e: at[e[0].path]
    )
    scan.queues = sorted((d for d in scan.queues if d.path not in lost), key=lambda d: at[d.path])
    scan.baselines = sorted((d for d in scan.baselines if d.path not in lost), key=lambda d: at[d.path])
    scan.future = sorted((e for e in scan.future if e[0].path not in lost), key=lambda e: at[e[0].path])


def unplaced_past_damage(increments: list[Increment], unread: RejectionCode | None) -> list[Increment]:
    """The increments, those with no living document to place them in saying why when it is stored but `unread`
    (its rejection code): the operator's fix is not the one for a living document never sent."""
    if unread is None:
        return increments
    why = {"unplaced_reason": _UNPLACED}
    return [i.model_copy(update=why) if i.unplaced_reason == "no_living_document" else i for i in increments]
