"""The living document of an axis: its numbered sections, the ids each cites, and what matches them."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache

from processors.arxiv_ids import extract_arxiv_ids, strip_version
from processors.id_titles import plausible_title
from processors.models import Document, Frozen
from processors.structure import parse_structure
from processors.tfidf import Vector, cosine

_SEPARATORS = re.compile(r"[/；;，,、。\n]")
# What opens an id's mention at the end of the text before it: `(`, `arXiv:`. A match starts at the first space of
# a run and takes the run once; from every space, split every way, a long run cost quadratic time.
_OPEN = re.compile(r"[（(]\s*$|(?<!\s)\s*(?:arxiv|arXiv)(?>\s*[: ]?\s*)$")


class LivingSection(Frozen):
    """One heading of a living document, its § number (if any) and the ids it cites."""

    number: str | None
    heading: str
    level: int = 0
    arxiv_ids: tuple[str, ...]
    text: str
    leaf: bool = True


class LivingDoc(Frozen):
    """A parsed living document."""

    name: str
    version: str | None
    sections: tuple[LivingSection, ...]
    cited_ids: frozenset[str]


def parse_living_doc(doc: Document) -> LivingDoc:
    """Build the living-document view from an already parsed document."""
    raw = doc.sections
    sections = tuple(
        LivingSection(
            number=s.number,
            heading=s.heading,
            level=s.level,
            arxiv_ids=tuple(extract_arxiv_ids(f"{s.heading}\n{s.text}")),
            text=s.text,
            # A leaf has no deeper heading right below it; leaves are where new material is written.
            leaf=i + 1 >= len(raw) or raw[i + 1].level <= s.level,
        )
        for i, s in enumerate(raw)
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


def section_title(section: LivingSection) -> str:
    """The heading without its § number: `§3.3 Cache Compression` → `Cache Compression`."""
    title = section.heading
    if section.number:
        title = re.sub(rf"^\s*{re.escape(section.number)}\.?\s*", "", title)
        title = re.sub(r"^\s*\d+(?:\.\d+)*(?:\ufe0f?\u20e3)?\.?\s+", "", title)
    return title.strip() or section.heading


def sections_citing(living: LivingDoc, arxiv_id: str) -> list[str]:
    """Labels (§ numbers, else headings) of the sections that cite `arxiv_id`, in document order."""
    wanted = strip_version(arxiv_id)
    labels = [section_label(s) for s in living.sections if wanted in s.arxiv_ids]
    return list(dict.fromkeys(labels))


@lru_cache(maxsize=256)
def _link_names(text: str) -> dict[str, str]:
    """arXiv id → the text of the Markdown link that points at it (`[**SnapKV: …**](…/abs/2404.14469)`).

    Links come from the Markdown parser, so `[pdf]`-style placeholders and links inside code are left out;
    a living document's few sections are asked about again for every increment, hence the cache.
    """
    out: dict[str, str] = {}
    for block in parse_structure(text).blocks():
        for label, url in block.links:
            name = label.strip(" *_.")
            if not plausible_title(name):
                continue
            for arxiv_id in extract_arxiv_ids(url):
                out.setdefault(
                    arxiv_id, name.split(":")[0].strip() if len(name) > 40 and ":" in name else name
                )
    return out


def _before_open_bracket(text: str) -> str:
    """The text up to its first bracket that nothing closes: `Foo (see` → `Foo `.

    Not `[（(][^）)]*$`: from every `(` that scan ran to the next `)`, quadratic in a run of `(`.
    """
    closed = max(text.rfind(")"), text.rfind("）"))
    opened = [i for i in (text.find("(", closed + 1), text.find("（", closed + 1)) if i >= 0]
    return text[: min(opened)] if opened else text


def anchored_names(section: LivingSection, limit: int = 6, first: Collection[str] = ()) -> list[str]:
    """Short names of what a section already anchors (the ids in `first` leading): link texts, else the
    words right before each id."""
    names: list[str] = []
    links = _link_names(section.text)
    wanted = {strip_version(i) for i in first}
    for arxiv_id in sorted(section.arxiv_ids, key=lambda i: i not in wanted):
        pos = section.text.find(arxiv_id)
        if arxiv_id in links:
            if links[arxiv_id] not in names:
                names.append(links[arxiv_id][:40])
            if len(names) >= limit:
                break
            continue
        if pos < 0:
            continue
        before = _OPEN.sub("", section.text[:pos])
        before = _before_open_bracket(before)
        name = _SEPARATORS.split(before)[-1].strip(" ：:—-*")
        if name and len(name) <= 40 and name not in names:
            names.append(name)
        if len(names) >= limit:
            break
    return names


class SectionMatcher:
    """Finds the living-document sections an increment relates to, by shared ids and by text."""

    def __init__(self, living: LivingDoc | None, vectorise: Callable[[str], Vector]) -> None:
        self.living = living
        self._vectors: list[tuple[LivingSection, Vector]] = []
        if living is not None:
            for s in living.sections:
                if s.leaf and (s.text.strip() or s.number):
                    self._vectors.append((s, vectorise(f"{s.heading}\n{s.heading}\n{s.text}")))
        self._vectorise = vectorise

    def by_label(self, label: str) -> LivingSection | None:
        if self.living is None:
            return None
        return next((s for s in self.living.sections if section_label(s) == label), None)

    def citing(self, ids: Collection[str]) -> list[LivingSection]:
        """Sections that cite any of `ids`, in document order."""
        if self.living is None:
            return []
        wanted = {strip_version(i) for i in ids}
        return [s for s in self.living.sections if wanted & set(s.arxiv_ids)]

    def similar(
        self, text: str, limit: int = 3, min_score: float = 0.12
    ) -> list[tuple[LivingSection, float]]:
        """The leaf sections most similar to `text`, best first."""
        vec = self._vectorise(text)
        scored = [(s, cosine(vec, v)) for s, v in self._vectors]
        scored = [(s, round(score, 4)) for s, score in scored if score >= min_score]
        scored.sort(key=lambda item: -item[1])
        return scored[:limit]

    def ranked(
        self, text: str, floor: float = 0.04, ratio: float = 0.5, limit: int = 3
    ) -> list[tuple[LivingSection, float]]:
        """The sections clearly closest to `text`: above `floor` and within `ratio` of the best one.

        Absolute cosines of short notes are small and corpus-dependent; the ranking is what holds.
        """
        hits = self.similar(text, limit=limit, min_score=floor)
        return [(s, score) for s, score in hits if score >= ratio * hits[0][1]] if hits else []

    def closest(self, section: LivingSection, texts: Sequence[str]) -> str:
        """The text (a key point) most similar to `section`, '' if none."""
        vec = next((v for s, v in self._vectors if s == section), None)
        if vec is None or not texts:
            return ""
        return max(texts, key=lambda t: cosine(self._vectorise(t), vec))
