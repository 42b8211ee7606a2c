"""The briefing browser's pages as HTML (issue 12 item 8): an axis × date index, a briefing with its sources
linked to their notes and the living document's sections, its D-items' history and what changed since the
previous briefing, and a note. Pure: the worker's views read the state and hand the data in.

Every value reaches the page through Jinja's autoescape; document text through `processors.inert.html_inline`
(escaped, bidi and control characters shown, links only to http(s)).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import jinja2
from markupsafe import Markup

from processors.i18n import Lang, reason_alone, rejection_label
from processors.inert import html_inline
from processors.models import Briefing, Discrepancy, Document
from processors.units import NoteNames, split_ref

_TIME = "%Y-%m-%d %H:%M"

# What the pages say around the document text, per language (the worker's `lang`: a briefing records none).
LABELS: dict[Lang, dict[str, str]] = {
    "en": {
        "index": "Briefings",
        "date": "date",
        "none": "no briefing yet",
        "window": "window",
        "trigger": "trigger",
        "generated": "generated",
        "living": "living document",
        "changes": "Since the previous briefing",
        "first": "the axis's first briefing",
        "previous": "previous",
        "sources_added": "sources added",
        "sources_gone": "sources gone",
        "increments_new": "increments new",
        "increments_gone": "increments gone",
        "d_opened": "D-items opened",
        "d_closed": "D-items closed",
        "increments": "Increments",
        "sources": "Sources",
        "discrepancies": "D-items",
        "open_since": "open since",
        "listed_in": "listed in",
        "claims": "claims",
        "suggestion": "suggestion",
        "related": "related sections",
        "suggested": "suggested sections",
        "path": "path",
        "title": "title",
        "status": "status",
        "duplicate_of": "duplicate of",
        "versions": "versions",
        "current": "current",
        "deleted": "deleted on every axis",
        "refused": "refused at the door since this version was stored: briefings list it among the rejected, not "
        "as a source, until the file can be read again",
        "damaged": "its stored text is damaged and cannot be read; briefings list it among the rejected",
        "never_stored": "refused at the door, no version of it stored: briefings list it among the rejected until "
        "the file can be read",
        "refused_at": "refused",
        "rejected": "Rejected",
        "reason": "reason",
        "details": "details",
        "nothing": "nothing",
        "gone_rejected": "rejected by this briefing",
        "gone_damaged": "rejected by this briefing: its stored text is damaged and cannot be read",
        "gone_row_missing": "rejected by this briefing: a row of it is missing from the state (a rebuild restores it)",
    },
    "zh": {
        "index": "简报",
        "date": "日期",
        "none": "尚无简报",
        "window": "窗口",
        "trigger": "触发",
        "generated": "生成于",
        "living": "活文档",
        "changes": "相对上一份简报的变化",
        "first": "该主轴的第一份简报",
        "previous": "上一份",
        "sources_added": "新增来源",
        "sources_gone": "移出来源",
        "increments_new": "新增量",
        "increments_gone": "消失的增量",
        "d_opened": "新开 D 项",
        "d_closed": "已关 D 项",
        "increments": "增量",
        "sources": "来源",
        "discrepancies": "D 项",
        "open_since": "自",
        "listed_in": "列于",
        "claims": "说法",
        "suggestion": "建议",
        "related": "相关章节",
        "suggested": "建议章节",
        "path": "路径",
        "title": "标题",
        "status": "状态",
        "duplicate_of": "重复于",
        "versions": "版本",
        "current": "当前",
        "deleted": "已在所有主轴删除",
        "refused": "此版本存储后文件在入口被拒收：在文件恢复可读之前，简报将其列入拒收，不作为来源",
        "damaged": "存储的正文已损坏、无法读取；简报将其列入拒收",
        "never_stored": "在入口被拒收，未存储任何版本：在文件恢复可读之前，简报将其列入拒收",
        "refused_at": "拒收于",
        "rejected": "拒收",
        "reason": "原因",
        "details": "详情",
        "nothing": "无",
        "gone_rejected": "本简报拒收",
        "gone_damaged": "本简报拒收：存储的正文已损坏、无法读取",
        "gone_row_missing": "本简报拒收：状态库缺少它的一行记录（rebuild 可恢复）",
    },
}


class Listed(Protocol):
    """One recorded briefing as the index lists it (sinks.emissions.EmissionEntry)."""

    @property
    def axis(self) -> str: ...
    @property
    def window_end(self) -> datetime: ...
    @property
    def trigger(self) -> str: ...
    @property
    def basename(self) -> str: ...
    @property
    def sources(self) -> int: ...
    @property
    def increments(self) -> int: ...
    @property
    def discrepancies(self) -> int: ...


@dataclass(frozen=True)
class Listing:
    """A D-item's appearance in one briefing of the axis: where it links and when its window ended."""

    window_end: datetime
    trigger: str
    basename: str


@dataclass(frozen=True)
class Changes:
    """What one briefing changed against the axis's previous one (None: it is the first)."""

    previous: str | None  # the previous briefing's basename
    sources_added: list[str] = field(default_factory=list)
    sources_gone: list[str] = field(default_factory=list)
    increments_new: list[str] = field(default_factory=list)
    increments_gone: list[str] = field(default_factory=list)
    d_opened: list[str] = field(default_factory=list)
    d_closed: list[str] = field(default_factory=list)
    # A source gone because this briefing rejects it (a note now damaged): its rejection code, said beside it.
    rejected: dict[str, str] = field(default_factory=dict)


def briefing_url(axis: str, basename: str) -> str:
    return f"/browse/{quote(axis, safe='')}/{quote(basename, safe='')}"


def note_url(path: str, anchor: str | None = None) -> str:
    return "/browse/note?" + urlencode({"path": path}) + (f"#{quote(anchor, safe='')}" if anchor else "")


def section_anchor(label: str) -> str:
    """`§3.3` → `sec-3.3`, `投机解码` → `sec-投机解码`: the id a note page gives a section (by its number, else its
    heading), which the briefing's `path#section` sources and living-document sections link to."""
    return "sec-" + (re.sub(r"\s+", "-", label.strip().lstrip("§").strip()) or "x")


_NO_NOTES = NoteNames()


def source_url(ref: str, paths: NoteNames = _NO_NOTES) -> str:
    """A briefing's source, `path` or `path#section` (processors.units), as a link to the note and section; `paths`
    the briefing's notes, matched whole first (a name may hold `#`)."""
    path, section = split_ref(ref, paths)
    return note_url(path, section_anchor(section) if section else None)


def changes(current: Briefing, previous: Briefing | None, previous_basename: str | None) -> Changes:
    """Sources, increments (by title) and D-items (by id) that came or went since the previous briefing."""
    if previous is None:
        return Changes(None)

    def diff(now: Iterable[str], before: Iterable[str]) -> tuple[list[str], list[str]]:
        a, b = dict.fromkeys(now), dict.fromkeys(before)
        return [x for x in a if x not in b], [x for x in b if x not in a]

    s_add, s_gone = diff((s.path for s in current.sources), (s.path for s in previous.sources))
    i_new, i_gone = diff((i.title for i in current.increments), (i.title for i in previous.increments))
    d_new, d_gone = diff((d.id for d in current.discrepancies), (d.id for d in previous.discrepancies))
    gone = set(s_gone)
    why = {r.path: str(r.reason_code or "") for r in current.rejected if r.path in gone}
    return Changes(previous_basename, s_add, s_gone, i_new, i_gone, d_new, d_gone, why)


def history(ids: Iterable[str], listings: Sequence[tuple[Listing, set[str]]]) -> dict[str, list[Listing]]:
    """Per D-item id, the briefings of the axis that listed it, oldest first (ids keep their number by key)."""
    return {d: [listing for listing, listed in listings if d in listed] for d in ids}


def index_rows(entries: Iterable[Listed], axes: Sequence[str], zone: ZoneInfo) -> list[dict[str, Any]]:
    """One row per local date of a window end, newest first: per axis the briefings that ended that day."""
    days: dict[str, dict[str, list[Listed]]] = {}
    for e in entries:
        day = e.window_end.astimezone(zone).strftime("%Y-%m-%d")
        days.setdefault(day, {a: [] for a in axes}).setdefault(e.axis, []).append(e)
    return [{"date": day, "cells": days[day]} for day in sorted(days, reverse=True)]


def _text(value: Any) -> Markup:
    """Document text: escaped, controls shown, http(s) links kept (processors.inert)."""
    return Markup(html_inline("" if value is None else str(value)))


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("processors", "templates/browse"),
    autoescape=True,  # every value escaped unless it went through `text` (which escapes it itself)
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["text"] = _text
_ENV.globals.update(
    briefing_url=briefing_url, note_url=note_url, source_url=source_url, section_anchor=section_anchor
)


def _render(template: str, lang: Lang, zone: ZoneInfo, **values: Any) -> str:
    def local(when: datetime) -> str:
        return when.astimezone(zone).strftime(_TIME)

    return _ENV.get_template(template).render(t=LABELS[lang], lang=lang, local=local, **values)


def index_page(entries: Iterable[Listed], axes: Sequence[str], zone: ZoneInfo, lang: Lang) -> str:
    return _render("index.html.j2", lang, zone, axes=axes, rows=index_rows(entries, axes, zone))


@dataclass(frozen=True)
class BriefingPage:
    """What a briefing's page shows besides the briefing: its changes and its D-items' history."""

    briefing: Briefing
    changes: Changes
    history: dict[str, list[Listing]]


def briefing_page(page: BriefingPage, zone: ZoneInfo, lang: Lang) -> str:
    b = page.briefing
    # An id no earlier briefing listed (or a history not read) is open since this briefing.
    found = {d.id: page.history.get(d.id, []) for d in b.discrepancies}
    since = {d: (h[0].window_end if h else b.window.end) for d, h in found.items()}
    return _render(
        "briefing.html.j2",
        lang,
        zone,
        b=b,
        c=page.changes,
        history=found,
        since=since,
        living=b.living_doc.path,
        paths=_paths(b, page.changes),
        claims_of=_claims,
        rejected=_rejected(b, lang),
    )


def _rejected(b: Briefing, lang: Lang) -> list[tuple[str, str | None, str]]:
    """Per file the briefing rejects: its path, its code's display text (None without one), the message without
    the path (the row names it)."""
    return [
        (r.path, rejection_label(r.reason_code, lang), reason_alone(r.path, r.reason)) for r in b.rejected
    ]


def _paths(b: Briefing, c: Changes) -> NoteNames:
    """The notes a briefing's page names: its sources, the living document, the sources gone since the last."""
    living = [b.living_doc.path] if b.living_doc.path else []
    return NoteNames([s.path for s in b.sources] + [r.path for r in b.rejected] + c.sources_gone + living)


def _claims(d: Discrepancy) -> list[tuple[str, str]]:
    return [(c.text, c.source) for c in d.claims]


@dataclass(frozen=True)
class NoteShown:
    """What a note's page says of it besides its text: deleted, unreadable (why), refused since (why); of a path
    refused and never stored, also the refusal's code and when the worker saw it (`refused_at`)."""

    deleted: bool = False
    unreadable: str = ""
    refused: str = ""
    refused_code: str | None = None
    refused_at: datetime | None = None


def note_page(
    path: str,
    document: Document | None,
    versions: Sequence[tuple[str, datetime, bool]],
    shown: NoteShown,
    zone: ZoneInfo,
    lang: Lang,
) -> str:
    """A note whole, each section with its anchor (`section_anchor` of its number, else its heading); or, when its
    stored text cannot be read back, or it was refused and never stored (`document` None), its path and why."""
    sections = [(section_anchor(s.number or s.heading), s) for s in document.sections] if document else []
    return _render(
        "note.html.j2",
        lang,
        zone,
        d=document,
        path=path,
        sections=sections,
        versions=versions,
        deleted=shown.deleted,
        unreadable=shown.unreadable,
        refused=reason_alone(path, shown.refused),  # the page names the path above it
        refused_at=shown.refused_at,
        refused_why=rejection_label(shown.refused_code, lang),
    )
