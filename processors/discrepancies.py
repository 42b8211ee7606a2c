"""D-items: contradictions and claims to verify, found across the window and the living document."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from processors.arxiv_ids import extract_arxiv_ids, yymm
from processors.i18n import Lang, say
from processors.key_points import STRIKING, clean_line, figures
from processors.living_doc import LivingDoc, section_label
from processors.models import Claim, Discrepancy, DiscrepancyKind, Document, DocumentSummary, TitledId
from processors.tokens import terms
from processors.units import Unit, section_ref, urls_in

# `vLLM 0.3.3`, `vLLM v0.30.0`, `Claude Code 2.1.114`, `TensorRT-LLM v1.2.1`; not `>= 1.2.4` constraints. A
# product starts at a word's start, never after its `-` or `+` (from each of them `a-a-a-…` was read again).
_VERSION = re.compile(
    r"(?<![\w.>=<~^!+-])(?P<product>[A-Za-z][A-Za-z0-9+_-]*(?: [A-Z][A-Za-z0-9+_-]*)?)\s+"
    r"(?P<op>[><=~^!]=?\s*)?v?(?P<version>\d+(?:\.\d+){1,3})(?![\w.+%×倍])"
)
_NOT_PRODUCTS = frozenset(
    {"v", "version", "in", "at", "to", "and", "or", "from", "on", "the", "of", "by", "arxiv"}
)
_ARXIV_LIKE = re.compile(r"\d{4}\.\d{4,5}")
_FLAGS = ("⚠", "待核实", "待确认", "[verify]", "unverified")
_KIND_ORDER: tuple[DiscrepancyKind, ...] = (
    "version_conflict",
    "arxiv_id_conflict",
    "future_arxiv_id",
    "flagged",
    "unsourced_claim",
)


@dataclass(frozen=True)
class _Item:
    kind: DiscrepancyKind
    subject: str
    claims: tuple[Claim, ...]
    suggestion: str


def ids_of(item: _Item) -> set[str]:
    """The arXiv ids an item's claims cite."""
    return {i for c in item.claims for i in extract_arxiv_ids(c.text)}


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def versions_in(text: str) -> list[tuple[str, str, str]]:
    """(product key, product as written, version) for every product version that is not a constraint."""
    out: list[tuple[str, str, str]] = []
    for m in _VERSION.finditer(text):
        product = m.group("product").strip()
        if m.group("op") or product.lower() in _NOT_PRODUCTS or _ARXIV_LIKE.fullmatch(m.group("version")):
            continue
        if product.islower():  # "only 6.32", "about 2.5": prose, not a product (vLLM, SGLang, Claude Code)
            continue
        out.append((product.lower(), product, m.group("version")))
    return out


def _same_version(a: str, b: str) -> bool:
    pa, pb = a.split("."), b.split(".")
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def version_conflicts(units: Sequence[Unit], living: LivingDoc | None, lang: Lang) -> list[_Item]:
    """One product named with different versions: in the window against the living document, or across writers."""
    anchored: dict[str, tuple[str, str, str]] = {}  # product key → (as written, version, section)
    if living is not None:
        for s in living.sections:
            for key, product, version in versions_in(f"{s.heading}\n{s.text}"):
                anchored.setdefault(key, (product, version, section_label(s)))
    seen: dict[str, list[tuple[str, str, Unit, str]]] = {}
    for u in units:
        for raw in u.text.splitlines():
            line = clean_line(raw)
            for key, product, version in versions_in(line):
                seen.setdefault(key, []).append((product, version, u, line))
    items: list[_Item] = []
    for key, uses in seen.items():
        if key in anchored:
            a_product, a_version, section = anchored[key]
            for product, version, u, line in uses:
                if not _same_version(version, a_version):
                    claims = (
                        Claim(text=line, source=u.ref),
                        Claim(
                            text=say(
                                "d.version.claim_living", lang, product=a_product, version=f"v{a_version}"
                            ),
                            source=section,
                        ),
                    )
                    items.append(_Item("version_conflict", say("d.version.subject", lang, product=product, a=version, b=f"v{a_version}"), claims,
                                       say("d.version.suggest", lang, where=say("d.where", lang, section=section), product=product, a=version, b=f"v{a_version}")))  # fmt: skip
                    break
            continue
        distinct = {v for _, v, _, _ in uses}
        writers = {u.writer for _, _, u, _ in uses}
        if len(writers) > 1 and any(not _same_version(a, b) for a in distinct for b in distinct):
            first, other = uses[0], next(x for x in uses if not _same_version(x[1], uses[0][1]))
            claims = (Claim(text=first[3], source=first[2].ref), Claim(text=other[3], source=other[2].ref))
            items.append(_Item("version_conflict", say("d.version.subject", lang, product=first[0], a=first[1], b=other[1]), claims,
                               say("d.version.suggest", lang, where="", product=first[0], a=first[1], b=other[1])))  # fmt: skip
    return items


def _title_key(title: str) -> frozenset[str]:
    return frozenset(terms(title))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _similar_title_pairs(keys: Sequence[frozenset[str]], threshold: float) -> Iterable[tuple[int, int]]:
    """Index pairs whose token sets have Jaccard ≥ threshold, via prefix filtering (rare tokens first).

    Two sets that similar must share one of the first |A| - ceil(t·|A|) + 1 of A's tokens in a global order,
    so only those tokens are indexed and probed instead of comparing every pair.
    """
    freq = Counter(t for k in keys for t in k)
    postings: dict[str, list[int]] = {}
    for n, key in enumerate(keys):
        ordered = sorted(key, key=lambda t: (freq[t], t))
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered)) + 1]
        seen: set[int] = set()
        for token in prefix:
            for m in postings.get(token, ()):
                if m not in seen and _jaccard(keys[m], key) >= threshold:
                    seen.add(m)
                    yield m, n
            postings.setdefault(token, []).append(n)


def id_conflicts(titled: Iterable[TitledId], lang: Lang) -> list[_Item]:
    """Same title under two ids (any pairs), or one id under two unrelated titles (strong pairs only)."""
    pairs = [(p, _title_key(p.title)) for p in titled if len(_title_key(p.title)) >= 2]
    items: list[_Item] = []
    reported: set[frozenset[str]] = set()

    def report(a: TitledId, b: TitledId, subject: str) -> None:
        key = frozenset({a.id, b.id, a.title.lower(), b.title.lower()})
        if key not in reported:
            reported.add(key)
            claims = (
                Claim(text=f"{a.title}（arXiv {a.id}）", source=a.source),
                Claim(text=f"{b.title}（arXiv {b.id}）", source=b.source),
            )
            items.append(_Item("arxiv_id_conflict", subject, claims, say("d.id.suggest", lang)))

    for m, n in _similar_title_pairs([k for _, k in pairs], 0.75):
        a, b = pairs[m][0], pairs[n][0]
        if a.id != b.id:
            report(a, b, say("d.id.subject_title", lang, title=_short(a.title, 50), ids=f"{a.id} / {b.id}"))
    by_id: dict[str, list[tuple[TitledId, frozenset[str]]]] = {}
    for p, key in pairs:
        if p.strong and min(len(key), 3) == 3:
            by_id.setdefault(p.id, []).append((p, key))
    for same in by_id.values():
        for i, (a, key_a) in enumerate(same):
            for b, key_b in same[i + 1 :]:
                if a.source != b.source and _jaccard(key_a, key_b) < 0.2:
                    report(a, b, say("d.id.subject_id", lang, id=a.id))
    return items


def future_id_hits(docs: Sequence[DocumentSummary], zone: ZoneInfo) -> list[tuple[DocumentSummary, str]]:
    """(note, id) for every id whose YYMM is later than the month of the note citing it."""
    hits: list[tuple[DocumentSummary, str]] = []
    for doc in docs:
        local = doc.event_time.astimezone(zone)
        hits.extend((doc, i) for i in doc.arxiv_ids if (ym := yymm(i)) and ym > (local.year, local.month))
    return hits


def future_ids(
    hits: Sequence[tuple[DocumentSummary, str]], whole: Mapping[str, Document], zone: ZoneInfo, lang: Lang
) -> list[_Item]:
    """D-items for `future_id_hits`, each quoting the line (and section) that cites the id."""
    items: list[_Item] = []
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
        items.append(_Item("future_arxiv_id", subject, (claim,), say("d.future.suggest", lang)))
    return items


def flagged_and_unsourced(
    units: Sequence[Unit], where: Mapping[str, str], lang: Lang, limit: int = 6
) -> list[_Item]:
    """Lines their writer marked ⚠/待核实, and striking figures in sections citing no id or URL."""
    items: list[_Item] = []
    for u in units:
        section = where.get(u.ref, "")
        at = say("d.where", lang, section=section) if section else ""
        # The note's own source line does not count: a blog citing a figure is not the figure's source.
        sourced = bool(u.primary_ids or urls_in(u.text))
        unsourced: list[str] = []
        for raw in u.text.splitlines():
            line = clean_line(raw)
            if not line:
                continue
            if any(flag in line for flag in _FLAGS):
                what = _short(re.sub(r"⚠\s*|待核实|待确认", "", line).strip(" ，,；;。.、"), 40)
                items.append(_Item("flagged", say("d.flagged.subject", lang, what=what), (Claim(text=line, source=u.ref),),
                                   say("d.flagged.suggest", lang, where=at)))  # fmt: skip
            elif not sourced and STRIKING.search(line) and not extract_arxiv_ids(line) and "http" not in line:
                unsourced.append(line)
        if unsourced and sum(1 for i in items if i.kind == "unsourced_claim") < limit:
            figs = " / ".join(
                sorted({f for line in unsourced for f in figures(line)}, key=unsourced[0].find)[:4]
            )
            heading = re.sub(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+", "", u.heading) or u.doc_title
            items.append(_Item("unsourced_claim", say("d.unsourced.subject", lang, what=_short(heading, 40)),
                               tuple(Claim(text=line, source=u.ref) for line in unsourced[:4]),
                               say("d.unsourced.suggest", lang, where=at, figures=figs)))  # fmt: skip
    return items


def number_items(items: Iterable[_Item], last_d_number: int) -> list[Discrepancy]:
    """Order by kind, drop repeats of the same claim, and number from `last_d_number + 1`."""
    ordered = sorted(items, key=lambda i: _KIND_ORDER.index(i.kind))
    out: list[Discrepancy] = []
    seen: set[tuple[str, str]] = set()
    for item in ordered:
        key = (item.kind, item.subject)
        claims_seen = {(c.text, c.source) for d in out for c in d.claims}
        if key in seen or (
            item.kind == "unsourced_claim" and all((c.text, c.source) in claims_seen for c in item.claims)
        ):
            continue
        seen.add(key)
        out.append(
            Discrepancy(
                id=f"D{last_d_number + len(out) + 1}",
                kind=item.kind,
                subject=item.subject,
                claims=list(item.claims),
                suggestion=item.suggestion,
            )
        )
    return out


@dataclass(frozen=True)
class Screening:
    """D-items about the window's ids, found before increments: an id under suspicion never leads one."""

    id_items: list[_Item]
    future_items: list[_Item]
    suspect: frozenset[str]


def screen_ids(
    stated: Sequence[TitledId],
    notes: Sequence[DocumentSummary],
    read: Callable[[Sequence[DocumentSummary]], Mapping[str, Document]],
    ids: tuple[Collection[str], Collection[str]],
    where: tuple[ZoneInfo, Lang],
) -> Screening:
    """Title/id conflicts and ids dated after their note. `ids` is (new, anchored); `read` loads notes whole.

    A new id titled like an anchored one, or dated after its note, is most likely a typo: a D-item, never an
    increment.
    """
    new_ids, anchored = ids
    zone, lang = where
    id_items = id_conflicts(stated, lang)
    hits = future_id_hits(notes, zone)
    future_items = future_ids(hits, read([d for d, _ in hits]), zone, lang)
    suspect = {i for item in id_items for i in ids_of(item) if i in new_ids and ids_of(item) & set(anchored)}
    suspect |= {i for item in future_items for i in ids_of(item)}
    return Screening(id_items=id_items, future_items=future_items, suspect=frozenset(suspect))
