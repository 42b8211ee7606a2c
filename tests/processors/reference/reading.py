"""The reference of the compiled pass over a note (`processors.structure.read_note`), in plain Python.

Each field is what the parse stage computed in Python before the pass was compiled: the structure walk over
pyromark's events, the arXiv-id patterns, `text.hash_normalised(normalise(body))`, the token counts of
`processors.tokens` and rensa's RMinHash over them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from processors.near_duplicates import Signature
from processors.structure import Structure
from processors.tokens import normalise, note_index, note_terms, token_counts
from tests.processors.reference.arxiv_ids import extract_arxiv_ids, invalid_arxiv_mentions
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

    def terms(self, title: str, keep: Iterable[str]) -> tuple[dict[str, int], int]:
        index = note_index(self.counts, title)
        return note_terms(index, keep), sum(index.values())


def read_note(body: str) -> ReferenceReading:
    """The reference reading of a body."""
    norm = normalise(body)
    counts = token_counts(norm)
    return ReferenceReading(
        structure=parse_structure(body),
        arxiv_ids=extract_arxiv_ids(body),
        invalid_ids=invalid_arxiv_mentions(body),
        text_hash=hash_normalised(norm),
        signature=signature_of(counts.keys()),
        counts=counts,
    )
