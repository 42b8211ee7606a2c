"""Which title goes with which arXiv id, as the documents state it: cards, headings, table rows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from processors.arxiv_ids import extract_arxiv_ids
from processors.key_points import clean_line
from processors.models import Document, DocumentSummary, TitledId
from processors.units import section_ref

_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")
_ID_NOISE = re.compile(
    r"(?:arxiv\s*[: ]?\s*)?\d{4}\.\d{4,5}(?:v\d+)?|https?://\S+|[（(]\s*[)）]", re.IGNORECASE
)


_BEFORE_ID = re.compile(
    r"([^/；;，,、。|：:]{2,60}?)\s*[（(]?\s*(?:arxiv\s*[: ]?\s*)?(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE
)


def _tidy(title: str) -> str:
    title = _ID_NOISE.sub(" ", _NUMBERING.sub("", title))
    return re.sub(r"\s+", " ", title).strip(" ：:—-·|（()）")


def titled_ids(doc: Document) -> list[TitledId]:
    """The (id, title) pairs a document states: its card title, id headings, id table rows."""
    out: list[TitledId] = []
    if doc.kind == "paper_card":
        out.extend(TitledId(id=i, title=doc.title, source=doc.path, strong=True) for i in doc.arxiv_ids[:1])
    for section in doc.sections:
        ref = section_ref(doc, section)
        heading_ids = extract_arxiv_ids(section.heading)
        heading = _tidy(section.heading)
        if len(heading_ids) == 1 and heading and section.level >= 2:
            out.append(TitledId(id=heading_ids[0], title=heading, source=ref, strong=True))
        first = next((clean_line(r) for r in section.text.splitlines() if clean_line(r)), "")
        first_ids = extract_arxiv_ids(first)
        if not heading_ids and len(first_ids) == 1 and section.level >= 2:
            # "Detokenization Leaks（arXiv 2609.06674）：…" names the paper before its id; the heading
            # above it may be a topic ("安全事件关联") rather than a title, so both are weak.
            named = lead_name(first, first_ids[0])
            out.extend(
                TitledId(id=first_ids[0], title=t, source=ref, strong=False)
                for t in dict.fromkeys(x for x in (named, heading) if x)
            )
        for raw in section.text.splitlines():
            if not raw.strip().startswith("|"):
                continue
            cells = [c.strip() for c in raw.strip().strip("|").split("|")]
            if len(cells) >= 2:
                ids = extract_arxiv_ids(cells[0])
                if len(ids) == 1 and _tidy(cells[1]):
                    out.append(TitledId(id=ids[0], title=_tidy(cells[1]), source=ref, strong=True))
    return out


def lead_name(line: str, arxiv_id: str) -> str:
    """The words right before `arxiv_id` in a line (`Detokenization Leaks（arXiv 2609.06674）`), or ''."""
    for m in _BEFORE_ID.finditer(line):
        if m.group(2) == arxiv_id.split("v")[0]:
            name = _tidy(m.group(1))
            return name if 2 <= len(name) <= 60 and not name.lower().startswith(("http", "来源")) else ""
    return ""


def inline_names(doc: Document) -> list[TitledId]:
    """Weak (id, name) pairs for every id with a short name right before it, anywhere in the text."""
    out: list[TitledId] = []
    for raw in doc.text.splitlines():
        line = clean_line(raw)
        for arxiv_id in extract_arxiv_ids(line):
            name = lead_name(line, arxiv_id)
            if name:
                out.append(TitledId(id=arxiv_id, title=name, source=doc.path, strong=False))
    return out


def best_titles(pairs: Iterable[TitledId]) -> dict[str, str]:
    """The first strong title of each id, else its first weak one."""
    titles: dict[str, str] = {}
    for p in sorted(pairs, key=lambda p: not p.strong):
        titles.setdefault(p.id, p.title)
    return titles


@dataclass(frozen=True)
class WindowTitles:
    """The title of each id (the arXiv API's first, then the documents'), the pairs stated, and which ids
    the API answered for."""

    best: dict[str, str]
    stated: list[TitledId]
    verified: dict[str, bool]


def stated_titles(doc: DocumentSummary) -> Sequence[TitledId]:
    """The pairs a document states, kept with its summary at parse time (or found now, for an older record)."""
    if doc.titled or not isinstance(doc, Document):
        return doc.titled
    return titled_ids(doc)


def window_titles(
    kept: Iterable[DocumentSummary],
    readers: Iterable[Document],
    api_titles: Mapping[str, str],
    window_ids: Sequence[str],
) -> WindowTitles:
    """Titles stated across the window (a typo'd id is caught wherever it sits); lead words before ids in
    the documents read whole (`readers`) fill in; the API is authoritative."""
    stated = [p for d in kept for p in stated_titles(d)]
    best = best_titles([*stated, *(p for d in readers for p in inline_names(d))])
    best.update(api_titles)
    verified = {i: i in api_titles for i in window_ids} if api_titles else {}
    return WindowTitles(best=best, stated=stated, verified=verified)
