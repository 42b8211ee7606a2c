"""The reference of the titles a note states for its ids (`processors.id_titles.stated_pairs`), in Python.

`stated_pairs` is the walk over a note's structure the product ran before the scan was compiled: every
block of every section, judged as it is met. `title_scan` is what the compiled pass (native/src/titles.rs)
must return for the same structure: per section, the raw texts it offers and the named-paper case, so that
the product judges only those. tests/processors/test_native_equality.py holds both equal.
"""

from __future__ import annotations

from collections.abc import Sequence

from processors.arxiv_ids import extract_arxiv_ids
from processors.boilerplate import section_boilerplate
from processors.id_titles import (
    _OPENS_WITH_ID,
    NAME,
    TRUST,
    NamedPaper,
    RawTitle,
    TitleScan,
    _candidate,
    block_ids,
    lead_name,
    title_cell,
    title_line,
)
from processors.models import TitledId
from processors.structure import SectionNode, Structure


def title_scan(structure: Structure) -> list[TitleScan]:
    """What each section offers, as `predigest_native.NoteReading.title_scan` lists it."""
    out: list[TitleScan] = []
    for index, section in enumerate(structure.sections):
        raws, section_ids = _raw_titles(section)
        named = _named_case(section, section_ids)
        if raws or named is not None:
            out.append((index, section.level, section.number, section.heading, raws, named))
    return out


def _raw_titles(section: SectionNode) -> tuple[list[RawTitle], dict[str, None]]:
    raws: list[RawTitle] = []
    heads = [section.head] if section.head is not None else []
    section_ids: dict[str, None] = {}
    for block in [*heads, *section.blocks]:
        ids = block_ids(block)
        section_ids.update(dict.fromkeys(ids))
        for text, url in block.links:
            link_ids = extract_arxiv_ids(url)
            if len(link_ids) == 1 and text:
                raws.append((link_ids[0], text, "link"))
        if len(ids) != 1:
            continue
        if block.kind == "table_row":
            cell = title_cell(block)
            if cell:
                raws.append((ids[0], cell, "table"))
        elif block.kind == "heading":
            raws.append((ids[0], section.heading if block is section.head else block.text, "heading"))
        elif block.lead and not any(block.lead == text for text, _ in block.links):
            raws.append((ids[0], block.lead, "lead"))
    lines = [t for t in (title_line(b) for b in section.blocks) if t]
    if lines and len(section_ids) == 1:
        raws.append((next(iter(section_ids)), lines[0], "title_line"))
    return raws, section_ids


def _named_case(section: SectionNode, section_ids: dict[str, None]) -> NamedPaper | None:
    if section.level < 2 or section.head is None or block_ids(section.head):
        return None
    first = next((b for b in section.blocks if b.text), None)
    ids = block_ids(first) if first is not None else []
    if first is None or len(ids) != 1:
        return None
    return ids[0], first.text, first.kind == "paragraph" and list(section_ids) == ids


# ---- the walk of before the scan was compiled ----------------------------------------------------


def section_ref(path: str, section: SectionNode) -> str:
    """`path#§2.4` for a numbered section, `path#heading` otherwise, the bare path for level 0 and 1."""
    if section.level <= 1:
        return path
    return f"{path}#{section.number or section.heading}"


def stated_pairs(
    path: str, kind: str, title: str, arxiv_ids: Sequence[str], structure: Structure
) -> list[TitledId]:
    """The (id, title) pairs a note states: a card's title for its id, then each section's pairs."""
    out: list[TitledId] = []
    if kind == "paper_card" and arxiv_ids:
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if title != stem:
            pair = _candidate(arxiv_ids[0], title, path, TRUST["card"])
            out.extend([pair] if pair else [])
    for section in structure.sections:
        out.extend(_section_pairs(section, section_ref(path, section)))
    return out


def _section_pairs(section: SectionNode, ref: str) -> list[TitledId]:
    out: list[TitledId] = []

    def add(arxiv_id: str, raw: str, kind: str) -> None:
        pair = _candidate(arxiv_id, raw, ref, TRUST[kind])
        if pair is not None:
            out.append(pair)

    heads = [section.head] if section.head is not None else []
    section_ids: dict[str, None] = {}
    for block in [*heads, *section.blocks]:
        ids = block_ids(block)
        section_ids.update(dict.fromkeys(ids))
        for text, url in block.links:
            link_ids = extract_arxiv_ids(url)
            if len(link_ids) == 1 and text:
                add(link_ids[0], text, "link")
        if len(ids) != 1:
            continue
        if block.kind == "table_row":
            cell = title_cell(block)
            if cell:
                add(ids[0], cell, "table")
        elif block.kind == "heading":
            add(ids[0], section.heading if block is section.head else block.text, "heading")
        elif block.lead and not any(block.lead == text for text, _ in block.links):
            add(ids[0], block.lead, "lead")
    lines = [t for t in (title_line(b) for b in section.blocks) if t]
    if lines and len(section_ids) == 1:
        add(next(iter(section_ids)), lines[0], "title_line")
    if not out:
        out.extend(_named_paper(section, ref, section_ids))
    return out


def _named_paper(section: SectionNode, ref: str, section_ids: dict[str, None]) -> list[TitledId]:
    if section.level < 2 or section.head is None or block_ids(section.head):
        return []
    first = next((b for b in section.blocks if b.text), None)
    ids = block_ids(first) if first is not None else []
    if first is None or len(ids) != 1:
        return []
    named = lead_name(first.text, ids[0])
    if named:
        pair = _candidate(ids[0], named, ref, NAME)
    elif (
        first.kind == "paragraph"
        and list(section_ids) == ids
        and _OPENS_WITH_ID.match(first.text)
        and section_boilerplate(section) is None
    ):
        pair = _candidate(ids[0], section.heading, ref, TRUST["section"])
    else:
        pair = None
    return [pair] if pair is not None else []
