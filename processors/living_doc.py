"""The living document of an axis: its numbered sections and the arXiv ids each cites."""

from __future__ import annotations

from processors.arxiv_ids import extract_arxiv_ids, strip_version
from processors.models import Document, Frozen


class LivingSection(Frozen):
    """One heading of a living document, its § number (if any) and the ids it cites."""

    number: str | None
    heading: str
    arxiv_ids: tuple[str, ...]
    text: str


class LivingDoc(Frozen):
    """A parsed living document."""

    name: str
    version: str | None
    sections: tuple[LivingSection, ...]
    cited_ids: frozenset[str]


def parse_living_doc(doc: Document) -> LivingDoc:
    """Build the living-document view from an already parsed document."""
    sections = tuple(
        LivingSection(
            number=s.number,
            heading=s.heading,
            arxiv_ids=tuple(extract_arxiv_ids(f"{s.heading}\n{s.text}")),
            text=s.text,
        )
        for s in doc.sections
    )
    cited = set(doc.arxiv_ids)
    for s in sections:
        cited.update(s.arxiv_ids)
    name = doc.path.rsplit("/", 1)[-1]
    name = name.rsplit(".", 1)[0] if "." in name else name
    return LivingDoc(name=name, version=doc.version, sections=sections, cited_ids=frozenset(cited))


def section_label(section: LivingSection) -> str:
    """The § number of a section, or its heading when it has none."""
    return section.number or section.heading


def sections_citing(living: LivingDoc, arxiv_id: str) -> list[str]:
    """Labels (§ numbers, else headings) of the sections that cite `arxiv_id`, in document order."""
    wanted = strip_version(arxiv_id)
    labels = [section_label(s) for s in living.sections if wanted in s.arxiv_ids]
    return list(dict.fromkeys(labels))
