"""Readers of the vendored real material (tests/corpus): arXiv records, daily-paper JSON, digests, living lists.

These parse the material for the bench's own purposes (note templates and ground truth), independently of
the product's parsers: a figure must not depend on the code it measures.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"
RECORDS = "arxiv_metadata/zl-asica_llm_inference_subset.jsonl"

ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
_ARXIV_LINK = re.compile(
    r"\[(?P<text>[^\]]+)\]\(https?://(?:www\.)?arxiv\.org/(?:abs|pdf|html)/(?P<id>\d{4}\.\d{4,5})(?:v\d+)?[^)]*\)"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_FIGURE = re.compile(r"\d+(?:\.\d+)?\s*(?:×|x\b|%|times\b|\$\\times\$)")
_VENUE = re.compile(
    r"\b(NeurIPS|ICML|ICLR|ACL|EMNLP|NAACL|COLM|MLSys|OSDI|SOSP|TACL)\s*['’]?\s*(20)?(\d{2})\b", re.IGNORECASE
)


def read_bytes(rel: str) -> bytes:
    return (CORPUS / rel).read_bytes()


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Paper:
    """One real arXiv record, with the few derived strings the note templates quote."""

    id: str
    title: str
    authors: tuple[str, ...]
    comment: str
    summary: str
    listing_date: str
    categories: tuple[str, ...]

    @property
    def title_line(self) -> str:
        return one_line(self.title)

    @property
    def authors_short(self) -> str:
        names = ", ".join(self.authors[:2])
        return f"{names} et al." if len(self.authors) > 2 else names

    @property
    def sentences(self) -> list[str]:
        return [s.replace("$\\times$", "×") for s in _SENTENCE.split(one_line(self.summary))]

    @property
    def first_sentence(self) -> str:
        return self.sentences[0]

    @property
    def figure_sentence(self) -> str:
        """The abstract's first sentence that states a figure (`3.7×`, `70%`), else its last sentence."""
        return next((s for s in self.sentences if _FIGURE.search(s)), self.sentences[-1])

    @property
    def venue(self) -> str:
        """A venue cell as a table writer fills it: from the arXiv comment, else `arXiv <year>`."""
        m = _VENUE.search(self.comment)
        if m:
            name = {"neurips": "NeurIPS", "mlsys": "MLSys", "colm": "COLM"}.get(
                m.group(1).lower(), m.group(1).upper()
            )
            return f"{name} 20{m.group(3)}"
        return f"arXiv 20{self.id[:2]}"


@cache
def arxiv_records() -> dict[str, Paper]:
    out: dict[str, Paper] = {}
    for line in (CORPUS / RECORDS).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        out[r["id"]] = Paper(
            id=r["id"],
            title=r["title"],
            authors=tuple(r["authors"]),
            comment=r.get("comment") or "",
            summary=r["summary"],
            listing_date=r.get("_listing_date", ""),
            categories=tuple(r.get("categories", ())),
        )
    return out


@dataclass(frozen=True)
class HfPaper:
    """One entry of a raw daily-paper JSON file."""

    id: str
    title: str
    upvotes: int
    summary: str


def _entries(data: Any) -> list[dict[str, Any]]:
    """The entries of a daily-paper file: a list of dicts, a list of repr strings, or {"data": …} of either."""
    if isinstance(data, dict):
        inner = data.get("data", [])
        data = json.loads(inner) if isinstance(inner, str) else inner
    out = []
    for item in data:
        # Some days were saved as Python reprs of the dicts (True/None, single quotes): not JSON.
        out.append(ast.literal_eval(item) if isinstance(item, str) else item)
    return out


@cache
def hf_papers(rel: str) -> tuple[HfPaper, ...]:
    data = json.loads(read_bytes(rel))
    out = []
    for e in _entries(data):
        paper = e.get("paper", e)
        out.append(
            HfPaper(
                id=str(paper["id"]),
                title=str(paper["title"]),
                upvotes=int(paper.get("upvotes", 0) or 0),
                summary=str(paper.get("summary", "")),
            )
        )
    return tuple(out)


def link_titles(text: str) -> list[tuple[str, str]]:
    """(id, link text) of every Markdown link to an arXiv page, bold and trailing dots removed."""
    return [
        (m.group("id"), m.group("text").strip().strip("*").strip().rstrip("."))
        for m in _ARXIV_LINK.finditer(text)
    ]


@dataclass(frozen=True)
class Heading:
    """One heading of a Markdown file and the text under it (until the next heading), by the bench's parser."""

    level: int
    text: str
    body: str
    line: int


_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def headings(markdown: str) -> list[Heading]:
    """The ATX headings of a Markdown text (outside fences), each with its body; text before any is level 0."""
    out: list[Heading] = []
    level, title, start = 0, "", 0
    body: list[str] = []
    fenced = False
    for n, line in enumerate(markdown.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
        m = None if fenced else _ATX.match(line)
        if m:
            out.append(Heading(level, title, "\n".join(body), start))
            level, title, start, body = len(m.group(1)), m.group(2), n, []
        else:
            body.append(line)
    out.append(Heading(level, title, "\n".join(body), start))
    return out


_TITLE_LINE = re.compile(r"\*\*原文标题：\*\*\s*(?P<title>.+?)\n\s*\n", re.DOTALL)


@dataclass(frozen=True)
class NewsletterPaper:
    """One paper section of a Chinese daily newsletter: `### n. 中文标题`, `**原文标题：** English title`."""

    index: int
    heading: str  # the translated title, without its number
    title: str  # the original (English) title, line breaks joined
    ids: tuple[str, ...]


def newsletter_papers(markdown: str) -> list[NewsletterPaper]:
    out = []
    for h in headings(markdown):
        m = re.match(r"(\d+)\.\s*(.+)", h.text)
        t = _TITLE_LINE.search(h.body + "\n\n")
        if h.level == 3 and m and t:
            ids = tuple(dict.fromkeys(ID.findall(h.body)))
            out.append(NewsletterPaper(int(m.group(1)), m.group(2).strip(), one_line(t.group("title")), ids))
    return out


_DIGEST_ENTRY = re.compile(
    r"^\[(?P<n>\d+)\]\s*\[(?P<title>.+?)\]\(https://arxiv\.org/abs/(?P<id>\d{4}\.\d{4,5})"
)


@dataclass(frozen=True)
class DigestEntry:
    n: int
    title: str
    id: str


def digest_entries(markdown: str) -> list[DigestEntry]:
    """The papers of an English arXiv digest: `### [n] [Title](https://arxiv.org/abs/id)`."""
    out = []
    for h in headings(markdown):
        m = _DIGEST_ENTRY.match(h.text)
        if h.level == 3 and m:
            out.append(DigestEntry(int(m.group("n")), one_line(m.group("title")), m.group("id")))
    return out
