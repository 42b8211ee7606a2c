"""The papers among a section's blocks: table rows and list items carrying an id or a title, each with the
blocks it owns; and what each says about its paper.

A row is a paper when it carries an id or a title under its table's title column; its title is that cell and
its statements are its other content cells (never the header, venue, author, date or link cells). A list item
is a paper when it carries an id (in its text or its links); it owns the items nested under it, never its
siblings; its title is its bold lead or the text of its link to the paper. In a section that holds such items,
a paragraph carrying an id is a paper of its own. Boilerplate blocks (processors.boilerplate) never are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from processors.arxiv_ids import extract_arxiv_ids
from processors.boilerplate import BoilerplateReason
from processors.id_titles import block_ids, clean_title, plausible_title, title_column
from processors.key_points import Said
from processors.statements import cell_statement, said_by
from processors.structure import Block

MAX_PARAGRAPH_IDS = 3  # a paragraph citing more ids is a list in running text, not one paper
PaperShape = Literal["row", "item", "paragraph"]


@dataclass(frozen=True, slots=True)
class PaperBlock:
    """One paper of a section: the block carrying it and the blocks it owns (nested items)."""

    shape: PaperShape
    blocks: tuple[Block, ...]  # the row or item first
    ids: tuple[str, ...]
    title: str  # as the row's title cell or the item's lead states it, '' when none is a plausible title
    statements: tuple[Said, ...]  # what it says about the paper, in order


def _title(text: str) -> str:
    title = clean_title(text)
    return title if plausible_title(title) else ""


def _row(block: Block, ids_of: Callable[[Block], list[str]]) -> PaperBlock | None:
    column = title_column(block.header)
    title = _title(block.cells[column]) if column is not None and column < len(block.cells) else ""
    ids = tuple(ids_of(block))
    if not ids and not title:
        return None
    header = [*block.header, *[""] * max(0, len(block.cells) - len(block.header))]
    said = [
        Said(s, bullet=True)
        for i, cell in enumerate(block.cells)
        if i != column and not extract_arxiv_ids(cell) and (s := cell_statement(cell, header[i]))
    ]
    return PaperBlock("row", (block,), ids, title, tuple(said))


def _item_title(block: Block, ids: Sequence[str]) -> str:
    if block.lead and block.text.startswith(block.lead):
        lead = _title(block.lead)
        if lead:
            return lead
    for text, url in block.links:
        if text and set(extract_arxiv_ids(url)) & set(ids):
            linked = _title(text)
            if linked and block.text.startswith(text):
                return linked
    return ""


def _item(blocks: Sequence[Block], ids: tuple[str, ...]) -> PaperBlock:
    head = blocks[0]
    title = _item_title(head, ids)
    said = [
        *said_by(head, title=title, own_ids=ids),
        *(s for b in blocks[1:] for s in said_by(b, own_ids=ids)),
    ]
    return PaperBlock("item", tuple(blocks), ids, title, tuple(said))


def papers_in(
    blocks: Sequence[Block],
    reasons: Sequence[BoilerplateReason | None],
    limit: int,
    ids_of: Callable[[Block], list[str]] = block_ids,
) -> tuple[list[PaperBlock], list[Block]]:
    """(the section's papers, at most `limit`; its other content blocks), in one pass over its blocks.

    `ids_of` gives a block's ids (the caller's memo: a block of 50,000 ids is read once)."""
    papers: list[PaperBlock] = []
    rest: list[Block] = []
    i, n = 0, len(blocks)
    while i < n:
        block, reason = blocks[i], reasons[i]
        i += 1
        if reason is not None or block.kind == "code":
            continue
        if len(papers) >= limit:
            continue
        if block.kind == "table_row":
            row = _row(block, ids_of)
            papers.append(row) if row is not None else rest.append(block)
            continue
        ids = tuple(ids_of(block)) if block.kind in ("list_item", "paragraph") else ()
        if block.kind != "list_item":
            if 0 < len(ids) <= MAX_PARAGRAPH_IDS:
                papers.append(PaperBlock("paragraph", (block,), ids, "", _said(block, ids)))
            else:
                rest.append(block)
            continue
        if not ids:
            rest.append(block)  # a plain item; an item nested under it may still carry a paper
            continue
        owned = [block]
        while i < n and blocks[i].kind == "list_item" and blocks[i].depth > block.depth:
            if reasons[i] is None:
                owned.append(blocks[i])  # nested under a paper: its points, even if it names another id
            i += 1
        papers.append(_item(owned, ids))
    return papers, rest


def _said(block: Block, ids: Sequence[str]) -> tuple[Said, ...]:
    return tuple(said_by(block, own_ids=ids))
