"""D-items: contradictions and claims to verify, found across the window and the living document.

Precision first: a D-item an editor dismisses at a glance costs trust, so every detector reads only what can
be a real discrepancy (named product releases, real titles, marked claims, striking figures) and is bounded
per note, so that no single note can make a briefing slow or its 三 unreadable.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from processors.arxiv_ids import extract_arxiv_ids, yymm
from processors.discrepancy_keys import (
    KIND_ORDER,
    DNumbers,
    Finding,
    flagged_key,
    future_key,
    unsourced_key,
    version_key,
)
from processors.i18n import Lang, say
from processors.id_conflicts import id_conflicts
from processors.key_points import clean_line, figures_in_order
from processors.living_doc import LivingDoc, section_label
from processors.models import ArxivEntry, Claim, Discrepancy, Document, DocumentSummary
from processors.product_versions import MAX_MENTIONS, VersionMention, release_numbers, versions_in
from processors.units import Unit, section_ref, urls_in
from processors.writer_flags import MAX_FLAGS_PER_NOTE, flagged_claims, names_a_source, unsourced_figures

__all__ = [
    "Screening",
    "flagged_and_unsourced",
    "future_ids",
    "id_conflicts",
    "mark_suspects",
    "number_items",
    "screen",
    "version_conflicts",
]

# What a line needs to hold a release once `clean_line` took its markup out (`_releases`: three parts or a `v`
# number): cleaning only removes `*`, `_`, `` ` ``, bullets and pipes, so they may sit between its characters.
_MAY_NAME_RELEASE = re.compile(r"[vV][*_`]*\d|\.[*_`]*\d[\d*_`]*\.")
_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")
MAX_FUTURE_PER_NOTE = 5  # a note citing thousands of ids "from the future" is one problem, not thousands
MAX_ITEMS = 60
MAX_PER_PRODUCT = 2  # releases of one product reported against the living document: more is a changelog  # per briefing: beyond that 三 stops being read


def ids_of(item: Finding) -> set[str]:
    """The arXiv ids an item's claims cite."""
    return {i for c in item.claims for i in extract_arxiv_ids(c.text)}


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _far(a: VersionMention, b: VersionMention) -> bool:
    """Releases an editor would stop at: another major, or minors more than two apart (0.3 against 0.30);
    neighbouring releases (0.29 / 0.30) are an upgrade, not a contradiction."""
    (ma, na), (mb, nb) = a.release, b.release
    return ma != mb or abs(na - nb) > 2


def _line_mentions(text: str, limit: int = MAX_MENTIONS) -> Iterator[tuple[str, VersionMention]]:
    """(line, mention) for product releases in prose, at most `limit`; a line naming further releases without
    their product (`vLLM 0.6.3 … upgrade to v0.7.0`) is about releases, not a claim of one."""
    count = 0
    for raw in text.splitlines():
        if "." not in raw or _MAY_NAME_RELEASE.search(raw) is None:
            continue  # no release without a dot and a three-part or `v` number: most lines are not cleaned
        line = clean_line(raw)
        mentions = versions_in(line)
        if mentions and len(set(release_numbers(line))) <= len({m.version for m in mentions}):
            for m in mentions:
                yield line, m
                count += 1
                if count >= limit:
                    return


def version_conflicts(units: Sequence[Unit], living: LivingDoc | None, lang: Lang) -> list[Finding]:
    """One named product at releases far apart: in a note against the living document, or across writers."""
    anchored: dict[str, dict[tuple[int, int], tuple[VersionMention, str]]] = defaultdict(dict)
    if living is not None:
        for s in living.sections:
            for m in versions_in(f"{s.heading}\n{s.text}"):
                anchored[m.key].setdefault(m.release, (m, section_label(s)))
    uses: dict[str, list[tuple[VersionMention, Unit, str]]] = defaultdict(list)
    for u in units:
        for line, m in _line_mentions(u.text):
            uses[m.key].append((m, u, line))
    items: list[Finding] = []
    for key, found in uses.items():
        if key in anchored:
            items.extend(_against_living(found, list(anchored[key].values()), lang))
        else:
            items.extend(_across_writers(found, lang))
    return items


def _against_living(
    found: Sequence[tuple[VersionMention, Unit, str]],
    anchored: Sequence[tuple[VersionMention, str]],
    lang: Lang,
) -> list[Finding]:
    latest, section = max(anchored, key=lambda ms: tuple(int(p) for p in ms[0].version.split(".")))
    out: dict[str, Finding] = {}
    for m, u, line in found:
        if any(not _far(m, a) for a, _ in anchored):
            continue
        key = version_key(m.key, m.version, latest.version)
        if key in out:
            continue
        if len(out) >= MAX_PER_PRODUCT:
            break
        subject = say("d.version.subject", lang, product=m.product, a=m.written, b=latest.written)
        claims = (
            Claim(text=line, source=u.ref),
            Claim(
                text=say("d.version.claim_living", lang, product=latest.product, version=latest.written),
                source=section,
            ),
        )
        where = say("d.where", lang, section=section)
        suggestion = say(
            "d.version.suggest", lang, where=where, product=m.product, a=m.written, b=latest.written
        )
        out[key] = Finding("version_conflict", key, subject, claims, suggestion)
    return list(out.values())


def _across_writers(found: Sequence[tuple[VersionMention, Unit, str]], lang: Lang) -> list[Finding]:
    """Two writers, each naming one release line of a product the living document does not anchor."""
    lines_of: dict[str | None, set[tuple[int, int]]] = defaultdict(set)
    for m, u, _ in found:
        lines_of[u.writer].add(m.release)
    if len(lines_of) < 2 or any(len(r) > 1 for r in lines_of.values()):
        return []
    first = found[0]
    other = next((x for x in found if x[1].writer != first[1].writer and _far(x[0], first[0])), None)
    if other is None:
        return []
    (a, ua, la), (b, ub, lb) = first, other
    key = version_key(a.key, a.version, b.version)
    subject = say("d.version.subject", lang, product=a.product, a=a.written, b=b.written)
    suggestion = say("d.version.suggest", lang, where="", product=a.product, a=a.written, b=b.written)
    claims = (Claim(text=la, source=ua.ref), Claim(text=lb, source=ub.ref))
    return [Finding("version_conflict", key, subject, claims, suggestion)]


def future_id_hits(docs: Sequence[DocumentSummary], zone: ZoneInfo) -> list[tuple[DocumentSummary, str]]:
    """(note, id) for ids whose YYMM is later than the month of the note citing them, a few per note."""
    hits: list[tuple[DocumentSummary, str]] = []
    for doc in docs:
        local = doc.event_time.astimezone(zone)
        late = (i for i in doc.arxiv_ids if (ym := yymm(i)) and ym > (local.year, local.month))
        for n, arxiv_id in enumerate(late):
            if n >= MAX_FUTURE_PER_NOTE:
                break
            hits.append((doc, arxiv_id))
    return hits


def future_ids(
    hits: Sequence[tuple[DocumentSummary, str]], whole: Mapping[str, Document], zone: ZoneInfo, lang: Lang
) -> list[Finding]:
    """D-items for `future_id_hits`, each quoting the line (and section) that cites the id."""
    items: list[Finding] = []
    for summary, arxiv_id in hits:
        doc = whole.get(summary.path)
        section = (
            next((s for s in doc.sections if arxiv_id in s.text or arxiv_id in s.heading), None)
            if doc
            else None
        )
        lines = (section.text if section else doc.text if doc else summary.title).splitlines()
        line = next((clean_line(r) for r in lines if arxiv_id in r), arxiv_id)
        month = f"{summary.event_time.astimezone(zone):%Y-%m}"
        claim = Claim(text=line, source=section_ref(doc, section) if doc else summary.path)
        subject = say("d.future.subject", lang, id=arxiv_id, month=month)
        items.append(
            Finding("future_arxiv_id", future_key(arxiv_id), subject, (claim,), say("d.future.suggest", lang))
        )
    return items


def flagged_and_unsourced(
    units: Sequence[Unit], where: Mapping[str, str], lang: Lang, limit: int = 6
) -> list[Finding]:
    """Claims their writer marked to verify (a few per note), and striking figures in sections citing no id,
    URL or named source (at most `limit`)."""
    items: list[Finding] = []
    flags_per_note: dict[str, int] = defaultdict(int)
    unsourced = 0
    for u in units:
        if u.kind == "baseline":  # an earlier briefing: its flags and figures are its own D-items already
            continue
        section = where.get(u.ref, "")
        at = say("d.where", lang, section=section) if section else ""
        room = MAX_FLAGS_PER_NOTE - flags_per_note[u.doc_path]
        for claim in flagged_claims(u.heading, u.text, room) if room > 0 else []:
            flags_per_note[u.doc_path] += 1
            subject = say("d.flagged.subject", lang, what=_short(claim.subject, 40))
            items.append(Finding("flagged", flagged_key(u.doc_path, claim.line), subject, (Claim(text=claim.line, source=u.ref),),
                                 say("d.flagged.suggest", lang, where=at)))  # fmt: skip
        # The note's own source line does not count: a blog citing a figure is not the figure's source.
        sourced = bool(u.primary_ids or u.paper_title or urls_in(u.text)) or names_a_source(
            u.text.splitlines()[:200]
        )
        lines = unsourced_figures(u.text, sourced)
        if lines and unsourced < limit:
            unsourced += 1
            # In reading order: by the first line stating each, then its place in that line.
            figs = " / ".join(list(dict.fromkeys(f for line in lines for f in figures_in_order(line)))[:4])
            heading = _untitled(u.heading) or u.doc_title
            items.append(Finding("unsourced_claim", unsourced_key(u.ref), say("d.unsourced.subject", lang, what=_short(heading, 40)),
                                 tuple(Claim(text=line, source=u.ref) for line in lines[:4]),
                                 say("d.unsourced.suggest", lang, where=at, figures=figs)))  # fmt: skip
    return items


def _untitled(heading: str) -> str:
    """A heading without its section number (`2.4 Mooncake` → `Mooncake`)."""
    return _NUMBERING.sub("", heading)


def number_items(items: Iterable[Finding], numbers: DNumbers) -> list[Discrepancy]:
    """Known discrepancies keep their D number, new ones continue after the highest used; an unsourced item
    whose every line another item already quotes is left out; at most MAX_ITEMS, by kind."""
    kept: list[Finding] = []
    quoted: set[tuple[str, str]] = set()
    for item in sorted(items, key=lambda i: KIND_ORDER.index(i.kind)):
        if item.kind == "unsourced_claim" and all((c.text, c.source) in quoted for c in item.claims):
            continue
        quoted.update((c.text, c.source) for c in item.claims)
        kept.append(item)
    return numbers.number(kept[:MAX_ITEMS])


def mark_suspects(
    entries: Sequence[ArxivEntry], items: Sequence[Discrepancy], suspect: Collection[str], lang: Lang
) -> list[ArxivEntry]:
    """四 lists a suspected typo with its D-item and the id it likely stands for, never as plainly new."""
    about = [d for d in items if d.kind in ("arxiv_id_conflict", "future_arxiv_id")]
    out: list[ArxivEntry] = []
    for e in entries:
        d = next((d for d in about if e.id in suspect and any(e.id in c.text for c in d.claims)), None)
        if d is None:
            out.append(e)
            continue
        others = sorted({i for c in d.claims for i in extract_arxiv_ids(c.text)} - {e.id})
        if d.kind == "arxiv_id_conflict" and others:
            note = say("d.suspect.typo", lang, d=d.id, other=" / ".join(others))
        else:
            note = say("d.suspect.future", lang, d=d.id)
        out.append(e.model_copy(update={"credibility": f"{e.credibility} · {note}"}))
    return out


@dataclass(frozen=True)
class Screening:
    """D-items about the window's ids, found before increments: an id under suspicion never leads one."""

    id_items: list[Finding]
    future_items: list[Finding]
    suspect: frozenset[str]


def screen(
    id_items: Sequence[Finding],
    hits: Sequence[tuple[DocumentSummary, str]],
    read: Callable[[Sequence[DocumentSummary]], Mapping[str, Document]],
    ids: tuple[Collection[str], Collection[str], Collection[str]],
    where: tuple[ZoneInfo, Lang],
) -> Screening:
    """Title/id conflicts (`id_items`) and ids dated after their note (`hits`), as D-items; `ids` is (new, anchored,
    the living document's), `read` loads notes whole.

    A new id titled like an anchored one, or dated after its note, is most likely a typo: a D-item, never an increment.
    """
    new_ids, anchored, living_ids = ids
    zone, lang = where
    docs = list({d.path: d for d, _ in hits}.values())
    future_items = future_ids(hits, read(docs), zone, lang)
    anchored_set = set(anchored)
    living_set, new_set = set(living_ids), set(new_ids)
    # An id titled like one the living document cites is most likely a typo of it, whether or not an earlier
    # briefing listed the typo already (its 四 lists every id); a new id titled like another anchored one too.
    typos = {
        i
        for item in id_items
        for i in ids_of(item)
        if (i not in living_set and (ids_of(item) - {i}) & living_set)
        or (i in new_set and (ids_of(item) - {i}) & anchored_set)
    }
    # A typo'd id is often dated after its note too (2609.08315 for 2509.08315): one discrepancy, told once, by
    # the item that names the right id.
    future_items = [item for item in future_items if not ids_of(item) & typos]
    suspect = typos | {i for _, i in hits}
    return Screening(id_items=list(id_items), future_items=future_items, suspect=frozenset(suspect))
