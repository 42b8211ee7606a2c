"""Assemble a v1 briefing from the documents of one axis window (walking-skeleton heuristics)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from processors.models import (
    ArxivEntry,
    ArxivMetadata,
    AxisSpec,
    Briefing,
    Claim,
    Discrepancy,
    Document,
    Increment,
    LivingDocRef,
    NoIncrementSource,
    Priority,
    Rejection,
    Relevance,
    Section,
    SourceEntry,
    SourceStatus,
    Summary,
    Trigger,
    WindowBounds,
)
from processors.near_duplicates import DuplicateOf, Fingerprint, find_duplicates
from processors.window import in_window

ARXIV_CREDIBILITY = "★★★★ — arXiv"
NO_INCREMENT_REASON = "未贡献增量：无 arXiv 号或均已覆盖"
_NEW_STYLE = re.compile(r"\d{4}\.\d{4,5}")
_D_NUMBER = re.compile(r"(?<![A-Za-z0-9])D(\d{1,6})(?!\d)")
_WORD = re.compile(r"\w{2,}")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)、])\s+")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])|(?<=\.)\s")
_FLAGS = ("⚠", "待核实")
_DKind = Literal["flagged", "future_arxiv_id"]


@dataclass
class _Hit:
    doc: Document
    section: Section | None
    stars: int


@dataclass
class _Candidate:
    arxiv_id: str
    order: int
    hits: list[_Hit] = field(default_factory=list)


def _relevance(doc: Document, axis: AxisSpec) -> Relevance:
    """Simple relevance: role labels first, then keyword hits in title and text."""
    if doc.kind == "baseline":
        own = doc.baseline_axis in (None, axis.name)
        return Relevance(label="基线" if own else "参考", stars=0, score=0.0)
    if doc.kind == "work_queue":
        return Relevance(label="参考", stars=0, score=0.0)
    anchors = doc.front_matter.get("anchors")
    anchored_here = isinstance(anchors, dict) and axis.name in anchors
    primary = doc.front_matter.get("primary")
    first_axis = primary if isinstance(primary, str) and primary else (doc.axes[0] if doc.axes else None)
    if first_axis is not None and first_axis != axis.name and not anchored_here:
        return Relevance(label="邻接", stars=0, score=0.0)
    haystack = f"{doc.title}\n{doc.text}".lower()
    keywords = axis.keywords or (axis.name,)
    hits = sum(haystack.count(k.lower()) for k in keywords if k)
    if hits >= 5:
        return Relevance(label="极高", stars=5, score=float(hits))
    if hits >= 2:
        return Relevance(label="高", stars=4, score=float(hits))
    return Relevance(label="中", stars=3, score=float(hits))


def _sort_key(doc: Document) -> tuple[datetime, str]:
    return (doc.event_time, doc.path)


def _section_ref(doc: Document, section: Section | None) -> str:
    if section is None:
        return doc.path
    return f"{doc.path}#{section.number or section.heading}"


def _clean_line(line: str) -> str:
    line = line.strip()
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            return ""
        return " · ".join(c for c in cells if c)
    if line.startswith("#") or set(line) <= set("-=*_ "):
        return ""
    return _BULLET.sub("", line).strip()


def _points(texts: Iterable[str], limit: int = 4) -> list[str]:
    out: list[str] = []
    for text in texts:
        for raw in text.splitlines():
            cleaned = _clean_line(raw)
            is_bullet = bool(_BULLET.match(raw)) or raw.strip().startswith("|")
            if cleaned and (is_bullet or any(ch.isdigit() for ch in cleaned)) and cleaned not in out:
                out.append(cleaned)
                if len(out) >= limit:
                    return out
    return out


def _thesis(texts: Iterable[str]) -> str:
    for text in texts:
        for raw in text.splitlines():
            cleaned = _clean_line(raw)
            if cleaned:
                return _SENTENCE_END.split(cleaned, maxsplit=1)[0].strip()
    return ""


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _living_sections_citing(living: Document | None, arxiv_id: str) -> list[str]:
    if living is None:
        return []
    found: list[str] = []
    for sec in living.sections:
        if sec.number and arxiv_id in f"{sec.heading}\n{sec.text}" and sec.number not in found:
            found.append(sec.number)
    return found


def _anchor_sections(doc: Document, axis: str) -> list[str]:
    anchors = doc.front_matter.get("anchors")
    if not isinstance(anchors, dict):
        return []
    value = anchors.get(axis)
    values = value if isinstance(value, list) else [value]
    return [str(v) if str(v).startswith("§") else f"§{v}" for v in values if v]


def _best_overlap(living: Document | None, text: str) -> list[str]:
    if living is None:
        return []
    words = _words(text)
    best, best_score = None, 0
    for sec in living.sections:
        score = len(words & _words(f"{sec.heading}\n{sec.text}"))
        if sec.number and score > best_score:
            best, best_score = sec.number, score
    return [best] if best else []


def _urls(texts: Iterable[str], arxiv_id: str) -> list[str]:
    pattern = re.compile(rf"https?://arxiv\.org/(?:abs|html|pdf)/{re.escape(arxiv_id)}(?:v\d+)?")
    found: list[str] = []
    for text in texts:
        for m in pattern.findall(text):
            if m not in found:
                found.append(m)
    return found or [f"https://arxiv.org/abs/{arxiv_id}"]


def _build_increment(cand: _Candidate, novelty: str, living: Document | None, axis: str) -> Increment:
    bodies = [h.section.text if h.section else h.doc.text for h in cand.hits]
    texts = [f"{h.section.heading}\n{h.section.text}" if h.section else h.doc.text for h in cand.hits]
    title = next(
        (h.section.heading for h in cand.hits if h.section and cand.arxiv_id in h.section.heading), ""
    )
    if not title:
        title = next((h.doc.title for h in cand.hits if h.doc.kind == "paper_card"), "")
    if not title:
        title = next((h.section.heading for h in cand.hits if h.section), cand.hits[0].doc.title)
    related = _living_sections_citing(living, cand.arxiv_id)
    suggested = list(related)
    if not suggested:
        for h in cand.hits:
            suggested = _anchor_sections(h.doc, axis) if h.doc.kind == "paper_card" else []
            if suggested:
                break
    if not suggested:
        suggested = _best_overlap(living, "\n".join(texts))
    sources = list(dict.fromkeys(_section_ref(h.doc, h.section) for h in cand.hits))
    return Increment(
        rank=0,
        title=title.strip() or cand.arxiv_id,
        stars=max(h.stars for h in cand.hits),
        arxiv=[cand.arxiv_id],
        sources=sources,
        urls=_urls(texts, cand.arxiv_id),
        points=_points(bodies),
        thesis=_thesis(bodies),
        credibility=ARXIV_CREDIBILITY,
        novelty="new" if novelty == "new" else "continued",
        related_sections=related,
        suggested_sections=suggested,
    )


def _discrepancies(docs: Sequence[Document], zone: ZoneInfo, last_d_number: int) -> list[Discrepancy]:
    items: list[Discrepancy] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: _DKind, subject: str, text: str, source: str, suggestion: str) -> None:
        if (kind, text) not in seen:
            seen.add((kind, text))
            claims = [Claim(text=text, source=source)]
            number = f"D{last_d_number + len(items) + 1}"
            items.append(
                Discrepancy(id=number, kind=kind, subject=subject, claims=claims, suggestion=suggestion)
            )

    for doc in docs:
        sections: Sequence[Section | None] = doc.sections or (None,)
        for sec in sections:
            body = sec.text if sec else doc.text
            for raw in body.splitlines():
                line = _clean_line(raw)
                if line and any(flag in line for flag in _FLAGS):
                    subject = line if len(line) <= 60 else line[:60] + "…"
                    add("flagged", subject, line, _section_ref(doc, sec), "归入时标注待核实；核验原始来源")
        local = doc.event_time.astimezone(zone)
        doc_yymm = (local.year % 100) * 100 + local.month
        for arxiv_id in doc.arxiv_ids:
            if _NEW_STYLE.fullmatch(arxiv_id) and int(arxiv_id[:4]) > doc_yymm:
                subject = f"arXiv {arxiv_id} 晚于文档日期 {local:%Y-%m}"
                add("future_arxiv_id", subject, arxiv_id, doc.path, "核验 arXiv 号是否笔误")
    return items


def assemble_briefing(
    *,
    axis: AxisSpec,
    trigger: Trigger,
    window: WindowBounds,
    generated_at: datetime,
    documents: Sequence[Document],
    living: Document | None,
    earlier_cited_ids: Collection[str],
    superseded: Sequence[Document] = (),
    rejected: Sequence[Rejection] = (),
    increment_range: tuple[int, int] = (3, 8),
    last_d_number: int = 0,
    zone: ZoneInfo,
    near_duplicate_threshold: float = 0.8,
) -> Briefing:
    """Build the briefing of one axis window from the current documents of that window."""
    docs = sorted(
        (d for d in documents if d.kind != "living" and in_window(d.event_time, window)), key=_sort_key
    )
    relevance = {d.path: _relevance(d, axis) for d in docs}
    dups = find_duplicates(
        (Fingerprint(d.path, d.event_time, d.text_hash, d.signature) for d in docs), near_duplicate_threshold
    )
    duplicate_of = {path: dup.kept for path, dup in dups.items()}
    kept = [d for d in docs if d.path not in duplicate_of]

    anchored: set[str] = set(earlier_cited_ids)
    if living is not None:
        anchored.update(living.arxiv_ids)
    for d in kept:
        if d.kind == "baseline" and relevance[d.path].label == "基线":
            anchored.update(d.arxiv_ids)
    window_ids = list(dict.fromkeys(i for d in kept for i in d.arxiv_ids))
    new_ids = [i for i in window_ids if i not in anchored]
    continued_ids = [i for i in window_ids if i in anchored]

    contributors = [d for d in kept if d.kind in ("inbox", "paper_card") and relevance[d.path].stars >= 3]
    candidates: dict[str, _Candidate] = {}
    for d in contributors:
        for arxiv_id in d.arxiv_ids:
            cand = candidates.setdefault(arxiv_id, _Candidate(arxiv_id, window_ids.index(arxiv_id)))
            secs_or_none: list[Section | None] = [
                s for s in d.sections if arxiv_id in f"{s.heading}\n{s.text}"
            ] or [None]
            stars = relevance[d.path].stars
            cand.hits.extend(_Hit(d, s, stars) for s in secs_or_none)

    def rank_key(c: _Candidate) -> tuple[bool, int, int, int]:
        support = len({h.doc.path for h in c.hits})
        return (c.arxiv_id not in new_ids, -support, -max(h.stars for h in c.hits), c.order)

    chosen = sorted(candidates.values(), key=rank_key)[: increment_range[1]]
    increments = [
        _build_increment(c, "new" if c.arxiv_id in new_ids else "continued", living, axis.name).model_copy(
            update={"rank": rank}
        )
        for rank, c in enumerate(chosen, start=1)
    ]
    contributed = {h.doc.path for c in chosen for h in c.hits}

    sources: list[SourceEntry] = []
    no_increment: list[NoIncrementSource] = []
    for d in docs:
        status: SourceStatus = "used"
        if d.path in duplicate_of:
            status = "duplicate"
            no_increment.append(NoIncrementSource(path=d.path, reason=f"与 {duplicate_of[d.path]} 重复"))
        elif d.path not in contributed:
            status = "no_increment"
            no_increment.append(NoIncrementSource(path=d.path, reason=NO_INCREMENT_REASON))
        sources.append(_source_entry(d, relevance[d.path], status, dups.get(d.path)))
    for d in sorted(superseded, key=_sort_key):
        sources.append(_source_entry(d, _relevance(d, axis), "superseded", None))

    discrepancies = _discrepancies(contributors, zone, last_d_number)
    by_id = {inc.arxiv[0]: inc for inc in increments}
    card_titles = {i: d.title for d in kept if d.kind == "paper_card" for i in d.arxiv_ids}
    arxiv = [
        ArxivEntry(
            id=i,
            title=by_id[i].title if i in by_id else card_titles.get(i, i),
            status="new" if i in new_ids else "continued",
            credibility=ARXIV_CREDIBILITY,
            sections=by_id[i].suggested_sections if i in by_id else _living_sections_citing(living, i),
            metadata=ArxivMetadata(source="document"),
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
        no_increment_sources=no_increment,
        priorities=_priorities(increments, discrepancies),
        rejected=list(rejected),
    )


def _source_entry(d: Document, rel: Relevance, status: SourceStatus, dup: DuplicateOf | None) -> SourceEntry:
    return SourceEntry(
        path=d.path,
        writer=d.writer,
        kind=d.kind,
        event_time=d.event_time,
        bytes=d.bytes,
        title=d.title,
        relevance=rel,
        status=status,
        duplicate_of=dup.kept if dup else None,
        duplicate_kind=dup.kind if dup else None,
        similarity=dup.similarity if dup else None,
        warnings=list(d.warnings),
    )


def _priorities(increments: Sequence[Increment], items: Sequence[Discrepancy]) -> list[Priority]:
    rows: list[Priority] = []
    for inc in increments:
        action = "写入 " + "/".join(inc.suggested_sections) if inc.suggested_sections else "写入（章节待定）"
        content = f"arXiv {'/'.join(inc.arxiv)} {inc.title}"
        rows.append(
            Priority(level="highest" if inc.novelty == "new" else "medium", content=content, action=action)
        )
    rows.sort(key=lambda p: p.level != "highest")
    if items:
        span = items[0].id if len(items) == 1 else f"{items[0].id}–{items[-1].id}"
        rows.append(Priority(level="low", content=f"{span} 标注", action="§附录标注"))
    return rows


def cited_ids_of(briefing: Briefing) -> set[str]:
    """Every arXiv id a briefing mentions (the next window's `earlier_cited_ids`)."""
    ids = set(briefing.summary.new_arxiv) | set(briefing.summary.continued_arxiv)
    ids.update(e.id for e in briefing.arxiv)
    ids.update(i for inc in briefing.increments for i in inc.arxiv)
    return ids


def max_d_number(texts: Iterable[str]) -> int:
    """The highest D number (`D199`) found in the texts, 0 if none."""
    return max((int(m) for t in texts for m in _D_NUMBER.findall(t)), default=0)
