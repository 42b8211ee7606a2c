"""From a raw file to the events the window stage stores: one per axis, a deletion, or a rejection."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo

from processors.axes import assign_axes
from processors.documents import file_time, is_blank, parse_read
from processors.errors import ParseError
from processors.models import AxisSpec, Document, Frozen, RawFile, built
from processors.reasons import RejectionCode
from processors.tokens import axis_terms

REJECTED_KEY = "_rejected"


class EventFields(Frozen):
    """What every documents record says besides its document (DocumentEvent, and the records' EventHeader)."""

    type: Literal["document", "deletion", "rejection"]
    path: str
    sha256: str
    seen_at: datetime
    axis: str | None = None
    reason: str | None = None  # a rejection's message for the operator
    reason_code: RejectionCode | None = None  # a rejection's code: the metric label, `rejected[].reason_code`
    # The file's time: a document's event time; for a deletion or a rejection the name's stamp, else the
    # mtime (its front matter is not read), so a re-emitted past window lists them. None: an older record.
    event_time: datetime | None = None
    mtime: float | None = None  # the file's mtime, for the end-to-end lag metric
    # Offset of the raw record on `predigest.raw`. Raw is keyed by path, so this orders the versions of
    # one path totally (content cannot: a file can be restored to earlier bytes). None: from before 0.2.
    raw_offset: int | None = None

    def fields(self) -> dict[str, Any]:
        """The shared fields' values, to build the other kind of event from."""
        return {name: getattr(self, name) for name in EventFields.model_fields}


class DocumentEvent(EventFields):
    """One axis's view of one raw record: a row of a `predigest.documents` record (processors.wire groups a
    note's axes by partition)."""

    document: Document | None = None

    @property
    def key(self) -> str:
        return self.axis or REJECTED_KEY


def keyword_terms(axes: tuple[AxisSpec, ...]) -> frozenset[str]:
    """Every index term of every configured axis keyword (and axis name)."""
    # Routing asks with its settings' own tuple for every note; the cache below hashed its four models each
    # time (~3 µs a note). The tuple and its frozen models cannot change, so the same object has the same terms.
    asked, terms = _Last.terms  # one tuple, replaced whole: threads see a pair that belongs together
    if asked is not axes:
        terms = _keyword_terms(axes)
        _Last.terms = (axes, terms)
    return terms


class _Last:
    """The axes tuple asked for last (held, so its id is not reused) and its terms."""

    terms: tuple[tuple[AxisSpec, ...] | None, frozenset[str]] = (None, frozenset())


@lru_cache(maxsize=8)
def _keyword_terms(axes: tuple[AxisSpec, ...]) -> frozenset[str]:
    return frozenset(t for a in axes for t in axis_terms(a.keywords, a.name))


@dataclass(frozen=True)
class Refusal:
    """Why a file is not a document: the operator's message and its code."""

    reason: str
    code: RejectionCode


def to_every_axis(
    raw: RawFile,
    seen_at: datetime,
    axes: Sequence[AxisSpec],
    raw_offset: int | None,
    zone: ZoneInfo,
    refusal: Refusal | None = None,
) -> list[DocumentEvent]:
    """A deletion (no refusal) or a rejection, one event per axis: every briefing lists the window's deletions
    and rejections, and each axis's window may live on another worker."""
    return [
        DocumentEvent(
            type="deletion" if refusal is None else "rejection",
            path=raw.path,
            sha256=raw.sha256,
            seen_at=seen_at,
            axis=a.name,
            reason=refusal.reason if refusal else None,
            reason_code=refusal.code if refusal else None,
            event_time=file_time(raw.path, raw.mtime, zone),
            raw_offset=raw_offset,
        )
        for a in axes
    ]


def route_read(
    raw: RawFile,
    axes: Sequence[AxisSpec],
    *,
    zone: ZoneInfo,
    max_bytes: int,
    seen_at: datetime,
    raw_offset: int | None = None,
) -> tuple[list[DocumentEvent], bytes | None]:
    """Parse a raw file and fan it out to its axes (deletions and rejections to every axis), with its stored body."""
    if raw.deleted:
        return to_every_axis(raw, seen_at, axes, raw_offset, zone), None
    try:
        doc, stored_body = parse_read(
            raw, zone=zone, max_bytes=max_bytes, keep_terms=keyword_terms(tuple(axes))
        )
        # Its body has a character but white space: not blank, known without decoding the file again (10 µs).
        if (not doc.text or doc.text.isspace()) and is_blank(raw.content):
            # Usually a note caught between create and first write; its next version is stored as usual.
            raise ParseError(f"{raw.path}: file is empty; nothing to brief", "empty")
    except ParseError as exc:
        return to_every_axis(raw, seen_at, axes, raw_offset, zone, Refusal(str(exc), exc.code)), None
    # Built, not validated: each value is a validated model's or the caller's, of its type (~3 µs an axis).
    shared = {"type": "document", "path": raw.path, "sha256": raw.sha256, "seen_at": seen_at, "axis": None,
              "reason": None, "reason_code": None, "event_time": doc.event_time, "mtime": raw.mtime,
              "raw_offset": raw_offset, "document": doc}  # fmt: skip
    return [built(DocumentEvent, shared | {"axis": name}) for name in assign_axes(doc, axes)], stored_body
