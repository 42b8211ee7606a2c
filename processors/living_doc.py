"""The living document of an axis: its sections (headings, § numbered or not), what each lists, what it cites.

A section is a heading of the document read with the Markdown parser. Its label is its § number when it has
one (`§3.3`), else its heading cleaned of emoji, keycaps and back-link residue (`Pruning / Evicting / Sparse`).
Boilerplate sections (the badge head, News, Licence, a list of tool repositories …) are kept for the record
but are no place for new material. What a section lists (the titles of its papers) is read from its blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from processors.arxiv_ids import extract_arxiv_ids, strip_version
from processors.boilerplate import BoilerplateReason, block_reasons, section_boilerplate
from processors.id_titles import block_ids, clean_title, lead_name, lead_names, plausible_title, title_cell
from processors.models import Document, Frozen
from processors.structure import Block, SectionNode, parse_structure
from processors.tfidf import Vector, cosine

# A keycap digit (`1️⃣ Pruning`) decorates a heading; it is no § number an editor would cite.
_KEYCAP = re.compile(r"^\s*\d{1,2}\ufe0f?\u20e3\s*")
_NUMBER = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*\.?\s+")
# Hosts of code, not papers: a section whose every link goes to one of them lists tools, not papers.
_CODE_HOST = re.compile(
    r"^https?://(?:www\.)?(?:github\.com|gitlab\.com|bitbucket\.org|huggingface\.co|pypi\.org)/", re.I
)
_PROSE_KINDS = ("paragraph", "quote")
_ITEM_KINDS = ("list_item", "table_row")


class ListedItem(Frozen):
    """One thing a section lists: a paper's title (link text, bold lead, title cell, words before its id)."""

    title: str
    ids: tuple[str, ...] = ()


class LivingSection(Frozen):
    """One heading of a living document: its label, what it cites and lists, and whether new material fits."""

    number: str | None  # `§3.3`; None without one (a keycap `1️⃣` is decoration, not a number)
    heading: str  # as the parser cleaned it
    level: int = 0
    arxiv_ids: tuple[str, ...]
    text: str
    leaf: bool = True  # no heading below it
    title: str = ""  # the heading without its number or keycap
    label: str = ""  # how briefings name it: the § number, else the title (with its parent's if two share it)
    boilerplate: BoilerplateReason | None = None
    items: tuple[ListedItem, ...] = ()  # the papers (or named things) it lists, in order
    passages: tuple[str, ...] = ()  # what it is matched on: each item's title, or a prose block's text
    lists: bool = False  # it lists items of its own (list items or table rows), not only prose

    @property
    def placeable(self) -> bool:
        """New material can go here: content, and a leaf or a section listing items of its own."""
        return self.boilerplate is None and self.level > 0 and (self.leaf or self.lists)


class LivingDoc(Frozen):
    """A parsed living document."""

    name: str
    version: str | None
    sections: tuple[LivingSection, ...]
    cited_ids: frozenset[str]


def _title(heading: str, number: str | None) -> str:
    title = _KEYCAP.sub("", heading)
    if number:
        title = _NUMBER.sub("", title.replace(number, "", 1) if title.startswith(number) else title)
    return title.strip() or heading


def _stated_title(block: Block) -> str:
    """The title a list item or row states: its link or bold lead, its title cell, else its first link text."""
    for raw in (block.lead, title_cell(block), *(text for text, _ in block.links)):
        title = clean_title(raw) if raw else ""
        if title and plausible_title(title):
            return title
    return ""


def _is_tool_list(section: SectionNode) -> bool:
    """Items that all link to code repositories and cite no paper: a list of projects, no place for papers."""
    urls = [url for b in section.blocks for text, url in b.links if text.strip()]
    return bool(urls) and all(_CODE_HOST.match(u) for u in urls) and not extract_arxiv_ids(section.text)


def _read_blocks(section: SectionNode) -> tuple[tuple[ListedItem, ...], tuple[str, ...], bool]:
    """The items a section lists, the passages it is matched on, and whether it lists items of its own."""
    items: list[ListedItem] = []
    passages: list[str] = []
    lists = False
    for block, reason in zip(section.blocks, block_reasons(section, whole=False), strict=True):
        if reason is not None or not block.text or block.kind not in (*_ITEM_KINDS, *_PROSE_KINDS):
            continue
        ids = tuple(dict.fromkeys(strip_version(i) for i in block_ids(block)))
        title = _stated_title(block) if block.kind in _ITEM_KINDS or block.lead else ""
        if title:
            items.append(ListedItem(title=title, ids=ids))
            passages.append(title)  # authors, venue and badges beside a title say nothing about the topic
            lists = lists or block.kind in _ITEM_KINDS
            continue
        # Prose (`KVTC（arXiv:2511.01815，20× 压缩）/ GEAR（…）`): the words before each id name it.
        names = lead_names(block.text) if len(ids) > 1 else None
        for arxiv_id in ids:
            name = names.get(arxiv_id, "") if names is not None else lead_name(block.text, arxiv_id)
            if name and plausible_title(name):
                items.append(ListedItem(title=name, ids=(arxiv_id,)))
        passages.append(block.text)
    return tuple(items), tuple(dict.fromkeys(passages)), lists


def _labels(sections: Sequence[LivingSection]) -> list[str]:
    """Each section's label; a title two sections share is qualified by its parent's (`Systems › Papers`)."""
    base = [s.number or s.title for s in sections]
    parents: list[str] = []
    stack: list[LivingSection] = []
    for s in sections:
        while stack and stack[-1].level >= s.level:
            stack.pop()
        parents.append(stack[-1].title if stack else "")
        stack.append(s)
    return [
        f"{parent} › {label}" if base.count(label) > 1 and parent and not label.startswith("§") else label
        for label, parent in zip(base, parents, strict=True)
    ]


def parse_living_doc(doc: Document) -> LivingDoc:
    """Build the living-document view of a document: its sections, their labels, items and boilerplate."""
    nodes = parse_structure(doc.text).sections
    sections: list[LivingSection] = []
    for i, node in enumerate(nodes):
        number = None if _KEYCAP.match(node.heading) else node.number
        items, passages, lists = _read_blocks(node)
        reason = section_boilerplate(node) or ("boilerplate_section" if _is_tool_list(node) else None)
        sections.append(
            LivingSection(
                number=number,
                heading=node.heading,
                level=node.level,
                arxiv_ids=tuple(dict.fromkeys(extract_arxiv_ids(f"{node.heading}\n{node.text}"))),
                text=node.text,
                # A leaf has no deeper heading right below it; leaves are where new material is written.
                leaf=i + 1 >= len(nodes) or nodes[i + 1].level <= node.level,
                title=_title(node.heading, number),
                boilerplate=reason,
                items=items,
                passages=passages,
                lists=lists,
            )
        )
    labelled = tuple(
        s.model_copy(update={"label": label}) for s, label in zip(sections, _labels(sections), strict=True)
    )
    cited = set(doc.arxiv_ids)
    for s in labelled:
        cited.update(s.arxiv_ids)
    name = doc.path.rsplit("/", 1)[-1]
    name = name.rsplit(".", 1)[0] if "." in name else name
    return LivingDoc(name=name, version=doc.version, sections=labelled, cited_ids=frozenset(cited))


def section_label(section: LivingSection) -> str:
    """How a briefing names the section: its § number, else its cleaned title."""
    return section.label or section.number or section.title or section.heading


def section_title(section: LivingSection) -> str:
    """The heading without its § number or keycap: `§3.3 Cache Compression` → `Cache Compression`."""
    return section.title or _title(section.heading, section.number)


def sections_citing(living: LivingDoc, arxiv_id: str) -> list[str]:
    """Labels of the content sections that cite `arxiv_id`, in document order (boilerplate never counts)."""
    wanted = strip_version(arxiv_id)
    labels = [section_label(s) for s in living.sections if wanted in s.arxiv_ids and s.boilerplate is None]
    return list(dict.fromkeys(labels))


def find_section(living: LivingDoc, label: str) -> LivingSection | None:
    """The section a label names: its label, § number or title (case aside); `§Quantization` (a card's
    anchor, which always gets a `§`) names `Quantization`."""
    wanted = label.strip()
    bare = wanted[1:].strip() if wanted.startswith("§") and not wanted[1:2].isdigit() else wanted
    for s in living.sections:
        if wanted in (s.label, s.number) or bare.lower() in (s.label.lower(), s.title.lower()):
            return s
    return None


def content_citing(living: LivingDoc, ids: Collection[str]) -> list[LivingSection]:
    """The content sections that cite any of `ids`, in document order (boilerplate never relates)."""
    wanted = {strip_version(i) for i in ids}
    return [s for s in living.sections if s.boilerplate is None and wanted & set(s.arxiv_ids)]


class SectionMatcher:
    """The content sections of a living document: by label, by the ids they cite, by similar text."""

    def __init__(self, living: LivingDoc | None, vectorise: Callable[[str], Vector]) -> None:
        self.living = living
        self._vectors: list[tuple[LivingSection, Vector]] = []
        if living is not None:
            for s in living.sections:
                if s.placeable:  # a leaf with a heading and no text yet is still a place
                    self._vectors.append((s, vectorise(f"{s.heading}\n{s.heading}\n{s.text}")))
        self._vectorise = vectorise

    def citing(self, ids: Collection[str]) -> list[LivingSection]:
        return content_citing(self.living, ids) if self.living is not None else []

    def similar(
        self, text: str, limit: int = 3, min_score: float = 0.12
    ) -> list[tuple[LivingSection, float]]:
        """The content sections most similar to `text` in the window's term space, best first."""
        vec = self._vectorise(text)
        scored = [(s, cosine(vec, v)) for s, v in self._vectors]
        scored = [(s, round(score, 4)) for s, score in scored if score >= min_score]
        scored.sort(key=lambda item: -item[1])
        return scored[:limit]
