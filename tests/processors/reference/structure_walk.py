"""The reference walk: a note's structure read from pyromark's (pulldown-cmark's) events in Python.

The product reads the same structure in compiled code (`processors.structure.parse_structure`, through
predigest_native); this walk defines what it must return, and tests/processors/test_native_equality.py holds
the two equal on random and real text. Linear in the size of the note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pyromark

from processors.structure import Block, BlockKind, Image, Link, SectionNode, Structure
from tests.processors.reference.markup import BACK_TEXT, clean_heading, section_number

_OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_FOOTNOTES
)


# ---- the event walk -----------------------------------------------------------

_TAG = re.compile(r"<[^<>]*>")
_SRC = re.compile(r"""\bsrc\s*=\s*["']?([^"'\s<>]+)""", re.IGNORECASE)


class _Builder:
    """A block being read: its inline text, links, images and lead, filled as events arrive."""

    __slots__ = (
        "alt", "cells", "checked", "depth", "header", "images", "inline", "kind", "lead", "lead_at",
        "lead_open", "line", "links", "nav", "parts", "quoted",
    )  # fmt: skip

    def __init__(self, kind: BlockKind, line: int, *, depth: int = 0, quoted: bool = False) -> None:
        self.kind: BlockKind = kind
        self.line = line
        self.depth = depth
        self.quoted = quoted
        self.parts: list[str] = []
        # Most blocks have no links, images or inline markup: those lists are made on first use.
        self.links: list[Link] | None = None
        self.images: list[Image] | None = None
        self.lead = ""
        self.lead_open = True  # nothing but white space read yet
        self.lead_at = -1  # depth in `inline` of the element being read as the lead
        # Open inline elements: (tag, index in parts where it started, url, the alt being read around it).
        self.inline: list[tuple[str, int, str, list[str] | None]] | None = None
        self.alt: list[str] | None = None  # inside an image, its alt text goes here, not into the text
        self.checked: bool | None = None
        self.cells: list[_Builder] | None = None  # table rows
        self.nav: list[tuple[int, int]] | None = None  # headings: spans of parts that are back-links
        self.header: tuple[str, ...] = ()  # table rows: the header cells of their table

    def text(self, value: str) -> None:
        if self.alt is not None:
            self.alt.append(value)
            return
        self.parts.append(value)
        if self.lead_open and self.lead_at < 0 and value.strip():
            self.lead_open = False

    def open(self, tag: str, url: str) -> None:
        if self.inline is None:
            self.inline = []
        if self.lead_open and self.lead_at < 0 and tag in ("Strong", "Link"):
            self.lead_at = len(self.inline)
        self.inline.append((tag, len(self.parts), url, self.alt))
        if tag == "Image":
            self.alt = []

    def close(self) -> None:
        if not self.inline:
            return
        tag, start, url, outer_alt = self.inline.pop()
        if tag == "Image":
            self.images = self.images or []
            self.images.append((" ".join("".join(self.alt or ()).split()), url))
            self.alt = outer_alt
        elif tag == "Link":
            text = " ".join("".join(self.parts[start:]).split())
            self.links = self.links or []
            self.links.append((text, url))
            if self.kind == "heading" and (
                url.startswith("#") or (len(text) <= 40 and BACK_TEXT.match(text))
            ):
                self.nav = self.nav or []
                self.nav.append((start, len(self.parts)))
        if self.lead_at == len(self.inline):
            self.lead = " ".join("".join(self.parts[start:]).split())
            self.lead_at = -1
            self.lead_open = False

    def plain(self) -> str:
        return " ".join("".join(self.parts).split())

    def block(self) -> Block:
        if self.kind == "table_row":
            row = self.cells or []
            cells = tuple(c.plain() for c in row)
            first = next((c for c, text in zip(row, cells, strict=True) if text), None)
            return Block(
                kind="table_row",
                text=" · ".join(c for c in cells if c),
                line=self.line,
                links=tuple(link for c in row for link in c.links or ()),
                images=tuple(i for c in row for i in c.images or ()),
                lead=first.lead if first else "",
                quoted=self.quoted,
                cells=cells,
                cell_links=tuple(tuple(c.links or ()) for c in row),
                header=self.header,
            )
        if self.kind == "html":
            raw = "".join(self.parts)
            return Block(
                kind="html",
                text=" ".join(_TAG.sub(" ", raw).split()),
                line=self.line,
                images=tuple(("", u) for u in _SRC.findall(raw)),
                quoted=self.quoted,
            )
        return Block(
            kind=self.kind,
            text="" if self.kind == "code" else self.plain(),
            line=self.line,
            links=tuple(self.links) if self.links else (),
            images=tuple(self.images) if self.images else (),
            lead=self.lead,
            depth=self.depth,
            checked=self.checked,
            quoted=self.quoted,
        )

    def heading_text(self) -> str:
        """The heading without its back-links (unless nothing else is left), cleaned."""
        if self.nav:
            keep, at = [], 0
            for start, end in self.nav:
                keep.extend(self.parts[at:start])
                at = end
            keep.extend(self.parts[at:])
            cleaned = clean_heading("".join(keep))
            if cleaned:
                return cleaned
        return clean_heading("".join(self.parts))


@dataclass(slots=True)
class _Offsets:
    """Byte offsets (pyromark's) to character offsets and line numbers, by a cursor that moves both ways."""

    data: bytes
    byte: int = 0
    char: int = 0
    line_byte: int = 0
    line: int = 1
    ascii: bool = False

    def to_char(self, b: int) -> int:
        if self.ascii:
            return b
        if b >= self.byte:
            self.char += len(self.data[self.byte : b].decode("utf-8", "replace"))
        else:
            self.char -= len(self.data[b : self.byte].decode("utf-8", "replace"))
        self.byte = b
        return self.char

    def to_line(self, b: int) -> int:
        if b >= self.line_byte:
            self.line += self.data.count(b"\n", self.line_byte, b)
        else:
            self.line -= self.data.count(b"\n", b, self.line_byte)
        self.line_byte = b
        return self.line


@dataclass(slots=True)
class _Section:
    level: int = 0
    head: _Builder | None = None
    heading_start: int = 0  # bytes
    text_start: int = 0  # bytes
    blocks: list[_Builder] = field(default_factory=list)


_INLINE = frozenset(("Strong", "Emphasis", "Strikethrough", "Link", "Image", "Superscript", "Subscript"))
_TEXT = frozenset(("Text", "Code", "InlineMath", "DisplayMath"))


def parse_structure(body: str) -> Structure:
    """The sections and blocks of a Markdown body, read in Python."""
    try:
        data = body.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: each becomes one '?', so offsets still index `body`
        data = body.encode("utf-8", "replace")
        body = data.decode("utf-8")
    walk = _Walk(_Offsets(data, ascii=len(data) == len(body)))
    # pyromark types each event precisely; the walk dispatches on the key, so it reads them as plain data.
    events = cast("Iterator[tuple[Any, dict[str, int]]]", pyromark.events_with_range(body, options=_OPTIONS))
    for event, span in events:
        if type(event) is str:  # SoftBreak, HardBreak, Rule
            if walk.target is not None and event != "Rule":
                walk.target.text(" ")
            continue
        [(key, value)] = event.items()
        if key in _TEXT:
            if walk.target is not None:
                walk.target.text(value)
        elif key == "Start":
            tag = value if type(value) is str else next(iter(value))
            if tag in _INLINE:
                if walk.target is not None:
                    walk.target.open(tag, value[tag].get("dest_url", "") if type(value) is dict else "")
            else:
                walk.start(tag, value, span["start"])
        elif key == "End":
            tag = value if type(value) is str else next(iter(value))
            if tag in _INLINE:
                if walk.target is not None:
                    walk.target.close()
            else:
                walk.end(span["end"])
        elif key == "Html":
            if walk.target is not None and walk.target.kind == "html":
                walk.target.parts.append(value)
        elif key == "TaskListMarker" and walk.target is not None:
            walk.target.checked = bool(value)
    return Structure(tuple(_finish(body, walk.sections, walk.offsets)))


class _Walk:
    """The open block containers of the event walk, and the sections read so far."""

    __slots__ = ("header", "lists", "offsets", "quotes", "sections", "stack", "target")

    def __init__(self, offsets: _Offsets) -> None:
        self.offsets = offsets
        self.sections = [_Section()]
        self.stack: list[tuple[str, _Builder | None]] = []  # (tag, the builder its inline text goes to)
        self.target: _Builder | None = None  # the innermost open container's builder
        self.header: list[tuple[str, ...]] = []  # the header cells of each open table
        self.quotes = 0
        self.lists = 0

    def push(self, tag: str, builder: _Builder | None) -> None:
        self.stack.append((tag, builder))
        self.target = builder

    def block(self, kind: BlockKind, at: int, depth: int = 0) -> _Builder:
        builder = _Builder(kind, self.offsets.to_line(at), depth=depth, quoted=self.quotes > 0)
        self.sections[-1].blocks.append(builder)
        return builder

    def start(self, tag: str, value: Any, at: int) -> None:
        target = self.target
        if tag == "Paragraph":
            if target is not None and target.kind == "list_item":
                if target.parts:
                    target.text(" ")
                self.push(tag, target)
            else:
                self.push(tag, self.block("quote" if self.quotes else "paragraph", at))
        elif tag == "Item":
            self.push(tag, self.block("list_item", at, depth=max(self.lists - 1, 0)))
        elif tag == "Heading":
            builder = _Builder("heading", self.offsets.to_line(at), quoted=self.quotes > 0)
            if self.stack:  # a heading inside a quote or a list is a block, not a section
                self.sections[-1].blocks.append(builder)
            else:
                level = int(value[tag]["level"][1:])
                self.sections.append(_Section(level=level, head=builder, heading_start=at, text_start=at))
            self.push(tag, builder)
        elif tag == "TableRow" or tag == "TableHead":
            row = _Builder("table_row", self.offsets.to_line(at), quoted=self.quotes > 0)
            if tag == "TableRow":  # the head row is read for its cells only: it is no row of the table
                row.header = self.header[-1] if self.header else ()
                self.sections[-1].blocks.append(row)
            self.push(tag, row)
        elif tag == "TableCell":
            cell = _Builder("paragraph", 0)
            if target is not None:
                target.cells = target.cells or []
                target.cells.append(cell)
            self.push(tag, cell)
        elif tag == "HtmlBlock":
            self.push(tag, self.block("html", at))
        elif tag == "CodeBlock":
            self.block("code", at)
            self.push(tag, None)
        else:  # containers whose text belongs to their children: lists, quotes, tables, footnotes
            self.lists += tag == "List"
            self.quotes += tag == "BlockQuote"
            if tag == "Table":
                self.header.append(())
            self.push(tag, None)

    def end(self, at: int) -> None:
        if not self.stack:
            return
        tag, builder = self.stack.pop()
        self.target = self.stack[-1][1] if self.stack else None
        self.lists -= tag == "List"
        self.quotes -= tag == "BlockQuote"
        if tag == "Table" and self.header:
            self.header.pop()
        elif tag == "TableHead" and builder is not None and self.header:
            self.header[-1] = tuple(c.plain() for c in builder.cells or ())
        elif tag == "Heading" and not self.stack and self.sections[-1].head is builder:
            self.sections[-1].text_start = at


def _finish(body: str, sections: list[_Section], offsets: _Offsets) -> list[SectionNode]:
    out: list[SectionNode] = []
    size = len(offsets.data)
    for i, s in enumerate(sections):
        end_byte = sections[i + 1].heading_start if i + 1 < len(sections) else size
        start = offsets.to_char(min(s.text_start, end_byte))
        end = offsets.to_char(end_byte)
        raw = body[start:end]
        lead = len(raw) - len(raw.lstrip("\r\n"))
        text = raw.strip("\r\n")
        if s.level == 0 and not text.strip():
            continue
        heading = s.head.heading_text() if s.head is not None else ""
        blocks = tuple(b.block() for b in s.blocks)
        out.append(
            SectionNode(
                level=s.level,
                number=section_number(heading) if s.head is not None else None,
                heading=heading,
                head=s.head.block() if s.head is not None else None,
                text=text,
                start=start + lead,
                end=start + lead + len(text),
                blocks=blocks,
            )
        )
    return out
