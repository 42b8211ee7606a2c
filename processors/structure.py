"""A note's Markdown structure, and the one compiled pass that reads it with everything else a note yields.

`read_note(body)` runs predigest_native's reader (Rust; pulldown-cmark, the parser pyromark wraps) over a
body once: its structure — sections split on top-level headings (ATX or setext, never inside code, quotes or
lists), each with its blocks: paragraphs, list items, table rows (with their table's header), block-quote
paragraphs, code and HTML blocks, nested headings; every block with its plain text (markup removed, links
reduced to their text, images left out), links, images, lead (the bold text or link text that opens it) and
line — and its arXiv ids, normalised-text hash, token counts, MinHash signature and the texts that may title
its ids (processors.id_titles). `parse_structure(body)` reads the structure alone. Linear in the size of the
note. The plain Python implementations these equal are
under tests/processors/reference/ (docs/development.md, "The compiled extension").
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import predigest_native

from processors.near_duplicates import MIN_SHINGLES, NUM_PERM, SEED
from processors.tokens import INDEX_TERMS, STOPWORDS

BlockKind = Literal["paragraph", "list_item", "table_row", "quote", "code", "html", "heading"]
Link = tuple[str, str]  # (text, url)
Image = tuple[str, str]  # (alt, url)


class Block(NamedTuple):
    """One block of a note, as plain text with its links, images and opening lead."""

    kind: BlockKind
    text: str  # plain text, whitespace collapsed; "" for code (never content)
    line: int  # 1-based line of the body where the block starts
    links: tuple[Link, ...] = ()
    images: tuple[Image, ...] = ()
    lead: str = ""  # the strong text or link text the block opens with
    depth: int = 0  # list items: 0 for a top-level item, 1 for an item nested once …
    checked: bool | None = None  # list items: a task box's state, None without one
    quoted: bool = False  # inside a block quote
    cells: tuple[str, ...] = ()  # table rows: plain text of each cell
    cell_links: tuple[tuple[Link, ...], ...] = ()  # table rows: the links of each cell
    header: tuple[str, ...] = ()  # table rows: the header cells of the row's table (never a row itself)


class SectionNode(NamedTuple):
    """A top-level heading and what follows it up to the next one; level 0 is the text before any heading."""

    level: int
    number: str | None  # "§3.3" from `§3.3 …`, `3.3 …` or a keycap `3️⃣ …`; None without one
    heading: str  # cleaned: links as their text; images, HTML, emoji and back-link residue removed
    head: Block | None  # the heading as a block (its links, lead, line); None for level 0
    text: str  # the Markdown under the heading, blank lines at both ends trimmed
    start: int  # character offsets of `text` in the body: body[start:end] == text
    end: int
    blocks: tuple[Block, ...] = ()


class Structure(NamedTuple):
    """The sections of one note, in order."""

    sections: tuple[SectionNode, ...]

    def blocks(self) -> list[Block]:
        """Every block of every section, in document order (section heads not included)."""
        return [b for s in self.sections for b in s.blocks]


# The reader builds these types itself (NamedTuples: immutable, compared by value, cheap to build from Rust).
READER = predigest_native.Reader(
    block=Block,
    section=SectionNode,
    structure=Structure,
    stopwords=STOPWORDS,
    num_perm=NUM_PERM,
    seed=SEED,
    min_shingles=MIN_SHINGLES,
    index_terms=INDEX_TERMS,
)

# A NoteReading holds `.arxiv_ids`, `.invalid_ids` (announced as arXiv ids but none), `.text_hash` (sha256 of
# the normalised text), `.signature` (MinHash; () below MIN_SHINGLES shingles), `.sections` ((number, heading,
# level, text) each), `.title_scan` (what may title which id: processors.id_titles), `.terms(title, keep)` (the
# note's index terms and length, processors.tokens.note_terms) and `.structure`, built as Python objects only
# when read: the parse stage needs the blocks of none but a rare section.
NoteReading = predigest_native.NoteReading


def parse_structure(body: str) -> Structure:
    """The sections and blocks of a Markdown body."""
    structure: Structure = READER.structure(body)
    return structure


def read_note(body: str, utf8: bytes | None = None) -> NoteReading:
    """One pass over a body, all it yields in a NoteReading (above). `utf8`: the body's bytes as the file holds
    them, when it is UTF-8 (spares encoding it again)."""
    return READER.read(body, utf8)
