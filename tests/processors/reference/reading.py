"""The reference of the compiled pass over a note (`processors.structure.read_note`), in plain Python.

Each field is what the parse stage computed in Python before the pass was compiled: the structure walk over
pyromark's events (with its sections and what they offer as titles, reference/id_titles.py), the arXiv-id patterns, `text.hash_normalised(normalise(body))`, the token counts of
`processors.tokens` and rensa's RMinHash over them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from processors.id_titles import TitleScan
from processors.near_duplicates import Signature
from processors.structure import Structure
from processors.tokens import normalise, note_index, note_terms, token_counts
from tests.processors.reference.arxiv_ids import extract_arxiv_ids, invalid_arxiv_mentions
from tests.processors.reference.id_titles import title_scan
from tests.processors.reference.near_duplicates import signature_of
from tests.processors.reference.structure_walk import parse_structure
from tests.processors.reference.text import hash_normalised


@dataclass(frozen=True)
class ReferenceReading:
    """What `predigest_native.NoteReading` holds, computed in Python."""

    structure: Structure
    arxiv_ids: list[str]
    invalid_ids: list[str]
    text_hash: str
    signature: Signature
    counts: Counter[str]
    sections: list[tuple[str | None, str, int, str]]  # (number, heading, level, text) of each section
    title_scan: list[TitleScan]

    def terms(self, title: str, keep: Iterable[str]) -> tuple[dict[str, int], int]:
        index = note_index(self.counts, title)
        return note_terms(index, keep), sum(index.values())

    def stored_body(self) -> None:
        """None: the Python pass left the stored body to `processors.wire`, which writes it when given none."""
        return None


def read_note(body: str, utf8: bytes | None = None) -> ReferenceReading:
    """The reference reading of a body (`utf8`, the product's shortcut past encoding it, is not needed)."""
    norm = normalise(body)
    counts = token_counts(norm)
    structure = parse_structure(body)
    return ReferenceReading(
        structure=structure,
        arxiv_ids=extract_arxiv_ids(body),
        invalid_ids=invalid_arxiv_mentions(body),
        text_hash=hash_normalised(norm),
        signature=signature_of(counts.keys()),
        counts=counts,
        sections=[(s.number, s.heading, s.level, s.text) for s in structure.sections],
        title_scan=title_scan(structure),
    )
