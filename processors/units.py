"""Units: the sections of the window's documents that increments are built from."""

from __future__ import annotations

import re
from collections.abc import Iterable

from processors.arxiv_ids import arxiv_urls, extract_arxiv_ids
from processors.id_titles import clean_title, plausible_title, title_line
from processors.key_points import clean_line
from processors.models import Document, DocumentSummary, Frozen, Kind, Section
from processors.structure import parse_structure
from processors.tokens import URL_CHAR, URL_TRAILING

_URL = re.compile(rf"https?://{URL_CHAR}+")
_SOURCE_PREFIX = re.compile(r"^\s*(?:来源|原始来源|source|url)\s*[:：]\s*", re.IGNORECASE)


class Unit(Frozen):
    """One section (or paper card) of one document, with the ids it is about and the ids it mentions."""

    doc_path: str
    doc_title: str
    writer: str | None
    kind: Kind
    ref: str  # `path#§2.4` or `path#heading`
    heading: str
    text: str
    primary_ids: tuple[str, ...]  # the ids the unit is about: in its heading or its first line
    ids: tuple[str, ...]  # every id it mentions
    urls: tuple[str, ...]
    stars: int
    score: float
    anchors: tuple[str, ...] = ()  # a paper card's sections of this axis (`anchors:` front matter)
    paper_title: str = ""  # a paper named by title only ("原文标题：…"): its identity when there is no id


def paper_title(text: str) -> str:
    """The title a section states for the paper it is about (`**原文标题：** …`, wrapped lines joined), '' if none."""
    for block in parse_structure(text).blocks():
        title = clean_title(title_line(block))
        if title:
            return title if len(title) >= 8 and plausible_title(title) else ""
    return ""


def section_ref(doc: Document, section: Section | None) -> str:
    """`path#§2.4` for a numbered section, `path#heading` otherwise, the bare path for the whole file."""
    if section is None or section.level == 0 or section.level == 1:
        return doc.path
    return f"{doc.path}#{section.number or section.heading}"


def urls_in(text: str) -> list[str]:
    """Every http(s) URL in the text, trailing punctuation removed, unique, in order."""
    return list(dict.fromkeys(u.rstrip(URL_TRAILING) for u in _URL.findall(text)))


def _first_line(text: str) -> str:
    for raw in text.splitlines():
        line = clean_line(raw)
        if line:
            return line
    return ""


def _primary(heading: str, text: str) -> list[str]:
    ids = extract_arxiv_ids(heading)
    return ids or extract_arxiv_ids(_SOURCE_PREFIX.sub("", _first_line(text)))


def _card_body(doc: Document) -> str:
    return "\n".join(s.text for s in doc.sections if s.text.strip())


def card_anchors(doc: DocumentSummary, axis: str) -> tuple[str, ...]:
    """The § sections a paper card anchors itself into for `axis` (`anchors: {inference: "§3.3"}`)."""
    anchors = doc.front_matter.get("anchors")
    value = anchors.get(axis) if isinstance(anchors, dict) else None
    values = value if isinstance(value, list) else [value] if value else []
    return tuple(s if s.startswith("§") else f"§{s}" for s in (str(v).strip() for v in values) if s)


def units_of(doc: Document, axis: str, stars: int, score: float) -> list[Unit]:
    """The units of one document: a paper card is one unit; a note gives one unit per section with text."""
    if doc.kind == "paper_card":
        body = _card_body(doc)
        ids = tuple(dict.fromkeys([*doc.arxiv_ids, *extract_arxiv_ids(body)]))
        return [
            Unit(
                doc_path=doc.path,
                doc_title=doc.title,
                writer=doc.writer,
                kind=doc.kind,
                ref=doc.path,
                heading=doc.title,
                text=body,
                primary_ids=tuple(doc.arxiv_ids[:1]),
                ids=ids,
                urls=tuple(urls_in(body)) or tuple(f"https://arxiv.org/abs/{i}" for i in doc.arxiv_ids[:1]),
                stars=stars,
                score=score,
                anchors=card_anchors(doc, axis),
            )
        ]
    # A source line under the title ("来源：https://…") vouches for every section of the note.
    doc_urls = [u for s in doc.sections if s.level <= 1 for u in urls_in(s.text)]
    out: list[Unit] = []
    for section in doc.sections:
        if not section.text.strip():
            continue
        body = section.text
        primary = _primary(section.heading, body)
        out.append(
            Unit(
                doc_path=doc.path,
                doc_title=doc.title,
                writer=doc.writer,
                kind=doc.kind,
                ref=section_ref(doc, section),
                heading=section.heading,
                text=body,
                primary_ids=tuple(primary),
                ids=tuple(extract_arxiv_ids(f"{section.heading}\n{body}")),
                urls=tuple(dict.fromkeys([*urls_in(body), *doc_urls])),
                stars=stars,
                score=score,
                paper_title="" if primary else paper_title(body),
            )
        )
    return out


def mention_units(unit: Unit, new_ids: Iterable[str]) -> list[Unit]:
    """Line-sized units for new ids a unit only mentions in passing, so each new id can be an increment."""
    wanted = set(new_ids) - set(unit.primary_ids)
    out: list[Unit] = []
    for raw in unit.text.splitlines():
        line = clean_line(raw)
        for arxiv_id in extract_arxiv_ids(line):
            if arxiv_id in wanted:
                wanted.discard(arxiv_id)
                out.append(
                    unit.model_copy(
                        update={
                            "text": line,
                            "primary_ids": (arxiv_id,),
                            "ids": tuple(extract_arxiv_ids(line)),
                            "urls": tuple(arxiv_urls(line)),
                        }
                    )
                )
    return out
