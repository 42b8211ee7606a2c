"""Units: what increments are built from, read from each note's Markdown structure.

A paper is a unit: a paper card; a section about one paper (its heading carries the id, it states an
`原文标题：`, or its first paragraph opens with the id); a table row or a list item carrying an id or a title,
with the items nested under it (processors.paper_blocks). A section without papers is a unit of its own only
if it has substance. Boilerplate blocks never enter a unit and boilerplate sections make none. Each unit keeps
its own statements, so that its key points and thesis are its own (processors.key_points), and its Markdown
lines, which the D-item detectors read.

Work is bounded per note: at most `MAX_UNITS_PER_NOTE` units, `MAX_PAPERS_PER_SECTION` papers per section,
every pass linear in the note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, NamedTuple

from processors.arxiv_ids import extract_arxiv_ids
from processors.boilerplate import BoilerplateReason, block_reasons, section_boilerplate
from processors.id_titles import block_ids, clean_title, plausible_title, title_line
from processors.key_points import Replayed, Said, has_substance, point_list, thesis_of
from processors.models import Document, DocumentSummary, Frozen, Kind, Section
from processors.paper_blocks import PaperBlock, papers_in
from processors.relevance import declared_axes
from processors.statements import row_statement, said_by
from processors.structure import Block, SectionNode, parse_structure
from processors.tokens import URL_CHAR, URL_TRAILING

_URL = re.compile(rf"https?://{URL_CHAR}+")
MAX_UNITS_PER_NOTE = 400
MAX_PAPERS_PER_SECTION = 100
MAX_LEAD_IDS = 3  # a first paragraph citing more ids than this is a list, not one paper's section
MAX_POINTS = 8  # points kept per unit: an increment shows at most six, from several units

UnitShape = Literal["card", "section_paper", "row", "item", "paragraph", "section"]


class Unit(Frozen):
    """One paper (card, section, row, item) or one paper-less section of one document, for one axis."""

    doc_path: str
    doc_title: str
    writer: str | None
    kind: Kind
    ref: str  # `path#§2.4` or `path#heading`: the section the unit sits in
    heading: str
    text: str  # the unit's Markdown lines, boilerplate blocks left out
    primary_ids: tuple[str, ...]  # the ids the unit is about
    ids: tuple[str, ...]  # every id it mentions
    urls: tuple[str, ...]
    stars: int  # its note's relevance stars and score
    score: float
    anchors: tuple[str, ...] = ()  # a paper card's sections of this axis (`anchors:` front matter)
    paper_title: str = (
        ""  # a paper named by title only (`原文标题：…`, a title cell): its identity without an id
    )
    shape: UnitShape = "section"
    points: tuple[str, ...] = ()  # its own key points: figure-bearing sentences first, then its opening one
    thesis: str = ""
    relevance: float = 0.0  # its own text's score against the axis profile (set when units are weighed)
    declared: bool = False  # its note declares the axis (front matter `axes`, `primary` or `anchors`)


def paper_title(text: str) -> str:
    """The title a section states for the paper it is about (`**原文标题：** …`, wrapped lines joined), '' if none."""
    for block in parse_structure(text).blocks():
        title = clean_title(title_line(block))
        if title:
            return title if len(title) >= 8 and plausible_title(title) else ""
    return ""


def section_ref(doc: DocumentSummary, section: Section | SectionNode | None) -> str:
    """`path#§2.4` for a numbered section, `path#heading` otherwise, the bare path for the whole file."""
    if section is None or section.level <= 1:
        return doc.path
    return f"{doc.path}#{section.number or section.heading}"


class NoteNames(frozenset[str]):
    """The notes a source ref may name (a name may hold `#`), and how long the longest is: no cut lies further in."""

    longest: int

    def __new__(cls, paths: Iterable[str] = ()) -> NoteNames:
        names = super().__new__(cls, paths)
        names.longest = max(map(len, names), default=0)
        return names


def split_ref(ref: str, notes: NoteNames) -> tuple[str, str]:
    """A source ref's note and section (`""`: the whole note), cut after the longest name of `notes` (whose names
    may hold `#`) it starts with, else at its first `#`."""
    if ref in notes:
        return ref, ""
    # Longest first (of notes `a/C` and `a/C#b.md`, `a/C#b.md#§1` cites the second), and only where a known name
    # can end: each `#` of a heading tried in turn made a slice of the ref, 0.6 s for a heading of 64,000.
    at = ref.rfind("#", 0, notes.longest + 1)
    while at >= 0 and ref[:at] not in notes:
        at = ref.rfind("#", 0, at)
    at = ref.find("#") if at < 0 else at
    return (ref, "") if at < 0 else (ref[:at], ref[at + 1 :])


def cites(ref: str, path: str, notes: NoteNames) -> bool:
    """Whether a source ref (`section_ref`) cites the note at `path`; `notes` the known notes (split_ref)."""
    return split_ref(ref, notes)[0] == path


def urls_in(text: str) -> list[str]:
    """Every http(s) URL in the text, trailing punctuation removed, unique, in order."""
    return list(dict.fromkeys(u.rstrip(URL_TRAILING) for u in _URL.findall(text)))


def card_anchors(doc: DocumentSummary, axis: str) -> tuple[str, ...]:
    """The § sections a paper card anchors itself into for `axis` (`anchors: {inference: "§3.3"}`)."""
    anchors = doc.front_matter.get("anchors")
    if not isinstance(anchors, dict):
        return ()  # most sources: asked of every one that can contribute
    value = anchors.get(axis)
    values = value if isinstance(value, list) else [value] if value else []
    return tuple(s if s.startswith("§") else f"§{s}" for s in (str(v).strip() for v in values) if s)


class _Lines:
    """A note's lines, to give each unit the Markdown of its own blocks (the D-item detectors read lines)."""

    def __init__(self, body: str) -> None:
        self.lines = body.splitlines()

    def of(self, blocks: Sequence[Block], following: dict[int, Block | None], end: int) -> str:
        out: list[str] = []
        for b in blocks:
            nxt = following.get(id(b))
            stop = nxt.line - 1 if nxt is not None else end
            if nxt is not None and nxt.kind == "table_row" and b.kind != "table_row":
                stop -= 2  # the next table's header and delimiter rows belong to no block
            out.extend(self.lines[b.line - 1 : max(b.line, stop)])
        return "\n".join(line for line in out if line.strip())


class _What(NamedTuple):
    """What a unit is about and what it says."""

    primary: tuple[str, ...]
    shape: UnitShape
    statements: Iterable[Said]
    paper_title: str = ""


def _statements(blocks: Sequence[Block], own_ids: Sequence[str], title: str = "") -> list[Said]:
    return list(_each_statement(blocks, own_ids, title))


def _each_statement(blocks: Iterable[Block], own_ids: Sequence[str], title: str = "") -> Iterator[Said]:
    """What the blocks state, in order, a block at a time; none of them the `title` itself."""
    # clean_title only removes characters (and turns white space into spaces): a text shorter than the title, or
    # missing one of its characters, cannot be it. A card's hundreds of sentences skip the regexes.
    chars = set(title) - {" "}
    for b in blocks:
        said = [Said(row_statement(b), bullet=True)] if b.kind == "table_row" else said_by(b, own_ids=own_ids)
        for s in said:
            if s.text and not (
                title and len(s.text) >= len(title) and chars <= set(s.text) and clean_title(s.text) == title
            ):
                yield s


class _NoteReader:
    """Builds the units of one note, section by section."""

    def __init__(self, doc: Document, axis: str, relevance: tuple[int, float]) -> None:
        self.doc, self.axis = doc, axis
        self.declared = any(axis in found for found in declared_axes(doc))
        self.stars, self.score = relevance
        self.lines = _Lines(doc.text)
        self.doc_urls: list[str] = []
        self.following: dict[int, Block | None] = {}  # the current section's block → the block after it
        self._ids: dict[int, list[str]] = {}  # the current section's block → its ids, read once
        self.source_urls: list[str] = []

    def ids_of(self, block: Block) -> list[str]:
        found = self._ids.get(id(block))
        if found is None:
            found = self._ids[id(block)] = block_ids(block)
        return found

    def unit(self, section: SectionNode, blocks: Sequence[Block], end: int, what: _What) -> Unit:
        text = self.lines.of(blocks, self.following, end)
        said = what.statements
        own = [u for b in blocks for _, u in b.links if u.startswith("http")]
        source = self.source_urls if what.shape in ("section_paper", "section") else []
        urls = tuple(dict.fromkeys([*source, *own, *urls_in(text), *self.doc_urls]))
        heading = section.heading or self.doc.title
        ids = tuple(
            dict.fromkeys([*extract_arxiv_ids(heading), *(i for b in blocks for i in self.ids_of(b))])
        )
        return Unit(
            doc_path=self.doc.path,
            doc_title=self.doc.title,
            writer=self.doc.writer,
            kind=self.doc.kind,
            ref=section_ref(self.doc, section),
            heading=heading,
            text=text,
            ids=ids,
            urls=urls,
            stars=self.stars,
            score=self.score,
            primary_ids=what.primary,
            paper_title=what.paper_title,
            declared=self.declared,
            shape=what.shape,
            points=tuple(point_list(said, MAX_POINTS)),
            thesis=thesis_of(said),
        )

    def section_units(self, section: SectionNode, end: int, room: int) -> list[Unit]:
        reasons = block_reasons(section, whole=False)
        if section_boilerplate(section, reasons) is not None:
            return []
        content = [b for b, r in zip(section.blocks, reasons, strict=True) if r is None and b.kind != "code"]
        self._ids = {}
        # A section's `来源：` line is boilerplate, never a point, but it is the section's source.
        self.source_urls = [
            u
            for b, r in zip(section.blocks, reasons, strict=True)
            if r == "source_spec"
            for u in urls_in(b.text)
        ]
        self.following = {
            id(b): nxt for b, nxt in zip(section.blocks, [*section.blocks[1:], None], strict=False)
        }
        head_ids = tuple(block_ids(section.head)) if section.head is not None else ()
        titled = next((t for b in content if (t := clean_title(title_line(b)))), "")
        if head_ids or titled:
            ids = head_ids or tuple(dict.fromkeys(i for b in section.blocks for i in self.ids_of(b)))
            primary = ids if head_ids or len(ids) == 1 else ()
            title = titled if titled and plausible_title(titled) else ""
            return [self._whole(section, content, end, primary, "" if primary else title)]
        papers, rest = papers_in(section.blocks, reasons, min(room, MAX_PAPERS_PER_SECTION), self.ids_of)
        first = _first_ids(section.blocks, reasons, self.ids_of)
        if first and not any(p.shape != "paragraph" for p in papers):
            return [self._whole(section, content, end, first)]  # `arXiv:2607.20468 提出 …` then its bullets
        out = [self._paper(section, p, end) for p in papers]
        loose = [b for b in rest if b.kind != "heading"]
        said = _statements(loose, ())
        if has_substance(said):
            out.append(self.unit(section, loose, end, _What((), "section", said)))
        return out

    def _whole(
        self,
        section: SectionNode,
        content: Sequence[Block],
        end: int,
        primary: tuple[str, ...],
        title: str = "",
    ) -> Unit:
        said = Replayed(_each_statement(content, primary, title))  # as far as its points and thesis read
        return self.unit(section, content, end, _What(primary, "section_paper", said, title))

    def _paper(self, section: SectionNode, paper: PaperBlock, end: int) -> Unit:
        what = _What(paper.ids[:1], paper.shape, paper.statements, "" if paper.ids else paper.title)
        return self.unit(section, paper.blocks, end, what)


def _first_ids(
    blocks: Sequence[Block], reasons: Sequence[BoilerplateReason | None], ids_of: Callable[[Block], list[str]]
) -> tuple[str, ...]:
    """The ids of a section's first block when it is a paragraph (a `来源：` line included) that carries them."""
    for block, reason in zip(blocks, reasons, strict=True):
        if block.kind == "code" or reason in ("navigation", "badge"):
            continue
        ids = ids_of(block) if block.kind in ("paragraph", "quote") else []
        return tuple(ids) if len(ids) <= MAX_LEAD_IDS else ()
    return ()


def _card(doc: Document, axis: str, relevance: tuple[int, float]) -> Unit:
    structure = parse_structure(doc.text)
    blocks: list[Block] = []
    for section in structure.sections:
        reasons = block_reasons(section, whole=False)
        if section_boilerplate(section, reasons) is None:
            blocks.extend(b for b, r in zip(section.blocks, reasons, strict=True) if r is None)
    ids = tuple(dict.fromkeys([*doc.arxiv_ids, *extract_arxiv_ids(doc.text)]))
    # Read only as far as its points and thesis need (a card states hundreds of things).
    said = Replayed(_each_statement(blocks, doc.arxiv_ids[:1], doc.title))
    urls = tuple(urls_in(doc.text)) or tuple(f"https://arxiv.org/abs/{i}" for i in doc.arxiv_ids[:1])
    return Unit(
        doc_path=doc.path,
        doc_title=doc.title,
        writer=doc.writer,
        kind=doc.kind,
        ref=doc.path,
        heading=doc.title,
        text="\n".join(s.text for s in structure.sections if s.text.strip()),
        primary_ids=tuple(doc.arxiv_ids[:1]),
        ids=ids,
        urls=urls,
        stars=relevance[0],
        score=relevance[1],
        anchors=card_anchors(doc, axis),
        shape="card",
        points=tuple(point_list(said, MAX_POINTS)),
        thesis=thesis_of(said),
    )


def units_of(doc: Document, axis: str, stars: int, score: float) -> list[Unit]:
    """The units of one document for `axis` (its note's relevance `stars` and `score` carried along)."""
    if doc.kind == "paper_card":
        return [_card(doc, axis, (stars, score))]
    structure = parse_structure(doc.text)
    reader = _NoteReader(doc, axis, (stars, score))
    # A source line under the note's title (`来源：https://…`) vouches for every section of the note.
    reader.doc_urls = [u for s in structure.sections if s.level <= 1 for u in urls_in(s.text)]
    out: list[Unit] = []
    line, at = 1, 0
    for section in structure.sections:
        room = MAX_UNITS_PER_NOTE - len(out)
        if room <= 0:
            break
        line += doc.text.count("\n", at, section.end)  # the section's last line, counted once over the note
        at = section.end
        out.extend(reader.section_units(section, line, room)[:room])
    return out
