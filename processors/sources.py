"""The window's sources as the briefing lists them: topic line, relevance, status, and why no increment."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from processors.arxiv_ids import card_number_from_name
from processors.i18n import Lang, say
from processors.models import (
    Document,
    DocumentSummary,
    NoIncrementSource,
    Relevance,
    SourceEntry,
    SourceStatus,
)
from processors.near_duplicates import DuplicateOf
from processors.units import card_anchors

_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")


def topic_line(doc: DocumentSummary, axis: str, lang: Lang, limit: int = 90) -> str:
    """A one-line summary of what a source is about, built from its headings (or its card fields)."""
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
    parts = [_NUMBERING.sub("", h).strip() for h in doc.headings if h != doc.title]
    parts = [p for p in dict.fromkeys(parts) if p]
    text = " + ".join(parts) or doc.title
    return text if len(text) <= limit else text[: limit - 1] + "…"


def source_entry(
    doc: DocumentSummary,
    axis: str,
    rel: Relevance,
    status: SourceStatus,
    duplicate: DuplicateOf | None,
    lang: Lang,
) -> SourceEntry:
    # One per source of the window (100k in the largest): built from validated parts, so not re-validated.
    return SourceEntry.model_construct(
        path=doc.path,
        writer=doc.writer,
        kind=doc.kind,
        event_time=doc.event_time,
        bytes=doc.bytes,
        title=doc.title,
        relevance=rel,
        status=status,
        duplicate_of=duplicate.kept if duplicate else None,
        duplicate_kind=duplicate.kind if duplicate else None,
        similarity=duplicate.similarity if duplicate else None,
        warnings=list(doc.warnings),
        topic=topic_line(doc, axis, lang),
    )


def no_increment(
    doc: DocumentSummary,
    *,
    axis: str,
    rel: Relevance,
    duplicate: DuplicateOf | None,
    low: bool,
    other_axis: str | None,
    anchored: Collection[str],
    had_candidates: bool,
    selected: int,
    lang: Lang,
    queue_items: Mapping[str, int],
) -> NoIncrementSource:
    """Why a source of the window yields no increment, in words and as a code."""

    def out(code: str, key: str, **values: object) -> NoIncrementSource:
        return NoIncrementSource.model_construct(path=doc.path, reason=say(key, lang, **values), code=code)

    if duplicate is not None and duplicate.kind == "near":
        return out(
            "duplicate", "why.near_duplicate", of=duplicate.kept, similarity=f"{duplicate.similarity:.2f}"
        )
    if duplicate is not None:
        return out("duplicate", "why.duplicate", of=duplicate.kept)
    if rel.label == "基线":
        return out("baseline", "why.baseline")
    if doc.kind == "baseline":
        return out("reference", "why.reference", axis=doc.baseline_axis or "?")
    if doc.kind == "work_queue":
        n = queue_items.get(axis, 0)
        return out("work_queue", "why.work_queue_has" if n else "why.work_queue", axis=axis, n=n)
    if rel.label == "邻接":
        other = other_axis or say("why.adjacent_axis_unknown", lang)
        return out("adjacent", "why.adjacent", other=other, axis=axis)
    if low:
        return out("low", "why.low", axis=axis, score=f"{rel.score:.2f}")
    if doc.arxiv_ids and all(i in anchored for i in doc.arxiv_ids):
        return out("covered", "why.covered", ids=" / ".join(doc.arxiv_ids[:4]))
    if had_candidates:
        return out("not_selected", "why.not_selected", n=selected)
    return out("no_content", "why.no_content")


def work_queue_items(doc: Document, axis_names: Collection[str]) -> dict[str, int]:
    """How many lines of a work queue carry each axis label (`1. llm-infra: …`)."""
    counts: dict[str, int] = {}
    for line in doc.text.splitlines():
        for name in axis_names:
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line):
                counts[name] = counts.get(name, 0) + 1
    return counts
