"""Parse arXiv API Atom responses into records; pure, no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException
from pydantic import BaseModel, ConfigDict

from processors.arxiv_ids import strip_version
from processors.errors import ProcessorError
from processors.models import ArxivMetadata

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
# An entry id is the abstract URL, http or https: http://arxiv.org/abs/astro-ph/0601001v1.
_ABS_RE = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/abs/(.+?)(?:v(\d+))?$")
_ERROR_RE = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/api/errors\b")

MetadataSource = Literal["arxiv_api", "cache"]


class ArxivAtomError(ProcessorError):
    """A response body that is not an Atom feed (HTML error page, truncated body, XML bomb)."""


class ArxivRecord(BaseModel):
    """What the arXiv API says about one paper; `id` carries no version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    version: int | None = None
    title: str
    published: str | None = None  # ISO date, 2016-05-26
    updated: str | None = None
    primary_category: str | None = None
    categories: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    summary: str = ""


class EnrichedId(BaseModel):
    """A record for one window id and where the worker got it (`document` means no record)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: ArxivRecord
    source: MetadataSource

    def metadata(self) -> ArxivMetadata:
        return ArxivMetadata(
            source=self.source, published=self.record.published, primary_category=self.record.primary_category
        )


NO_RECORDS: Mapping[str, EnrichedId] = MappingProxyType({})


class AtomFeed(BaseModel):
    """One parsed response: its records, arXiv's error messages, and opensearch totalResults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    records: tuple[ArxivRecord, ...] = ()
    errors: tuple[str, ...] = ()
    total_results: int | None = None


def _text(el: Element | None) -> str:
    return " ".join((el.text or "").split()) if el is not None else ""


def _iso_date(value: str) -> str | None:
    # Atom timestamps are 2016-05-26T17:59:46Z; the briefing wants the date.
    return value[:10] if re.match(r"\d{4}-\d{2}-\d{2}", value) else None


def _entry(entry: Element) -> ArxivRecord | str:
    """The record of an entry, or an error message when the entry is arXiv's error report."""
    raw_id = _text(entry.find(f"{_ATOM}id"))
    if _ERROR_RE.match(raw_id):
        return _text(entry.find(f"{_ATOM}summary")) or raw_id
    m = _ABS_RE.match(raw_id)
    title = _text(entry.find(f"{_ATOM}title"))
    if m is None or not title:
        return f"entry without an abstract id or a title: {raw_id or '(no id)'}"
    primary = entry.find(f"{_ARXIV}primary_category")
    return ArxivRecord(
        id=strip_version(m.group(1)),
        version=int(m.group(2)) if m.group(2) else None,
        title=title,
        published=_iso_date(_text(entry.find(f"{_ATOM}published"))),
        updated=_iso_date(_text(entry.find(f"{_ATOM}updated"))),
        primary_category=primary.get("term") if primary is not None else None,
        categories=tuple(c.get("term", "") for c in entry.findall(f"{_ATOM}category") if c.get("term")),
        authors=tuple(_text(a.find(f"{_ATOM}name")) for a in entry.findall(f"{_ATOM}author")),
        summary=_text(entry.find(f"{_ATOM}summary")),
    )


def parse_feed(body: bytes) -> AtomFeed:
    """Records and error messages of an arXiv API response body; ArxivAtomError if it is not Atom."""
    try:
        root = SafeET.fromstring(body, forbid_dtd=True)
    except (SafeET.ParseError, DefusedXmlException) as exc:
        raise ArxivAtomError(f"not an XML Atom feed: {exc}") from exc
    if root.tag != f"{_ATOM}feed":
        raise ArxivAtomError(f"not an Atom feed: root element is {root.tag!r}")
    records: list[ArxivRecord] = []
    errors: list[str] = []
    for entry in root.findall(f"{_ATOM}entry"):
        parsed = _entry(entry)
        if isinstance(parsed, ArxivRecord):
            records.append(parsed)
        else:
            errors.append(parsed)
    total = _text(root.find(f"{_OPENSEARCH}totalResults"))
    return AtomFeed(
        records=tuple(records), errors=tuple(errors), total_results=int(total) if total.isdigit() else None
    )
