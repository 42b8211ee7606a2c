"""From a raw file to the events the window stage stores: one per axis, a deletion, or a rejection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from processors.axes import assign_axes
from processors.documents import parse_document
from processors.errors import ParseError
from processors.models import AxisSpec, Document, Frozen, RawFile

REJECTED_KEY = "_rejected"


class DocumentEvent(Frozen):
    """What `predigest.documents` carries, keyed by axis: one axis's view of one raw record."""

    type: Literal["document", "deletion", "rejection"]
    path: str
    sha256: str
    seen_at: datetime
    axis: str | None = None
    document: Document | None = None
    reason: str | None = None
    mtime: float | None = None  # the file's mtime, for the end-to-end lag metric
    # Offset of the raw record on `predigest.raw`. Raw is keyed by path, so this orders the versions of
    # one path totally (content cannot: a file can be restored to earlier bytes). None: from before 0.2.
    raw_offset: int | None = None

    @property
    def key(self) -> str:
        return self.axis or REJECTED_KEY


def route_raw(
    raw: RawFile,
    axes: Sequence[AxisSpec],
    *,
    zone: ZoneInfo,
    max_bytes: int,
    seen_at: datetime,
    raw_offset: int | None = None,
) -> list[DocumentEvent]:
    """Parse a raw file and fan it out to its axes; deletions and rejections go to every axis."""
    if raw.deleted:
        return [
            DocumentEvent(
                type="deletion",
                path=raw.path,
                sha256=raw.sha256,
                seen_at=seen_at,
                axis=a.name,
                raw_offset=raw_offset,
            )
            for a in axes
        ]
    try:
        doc = parse_document(raw, zone=zone, max_bytes=max_bytes)
    except ParseError as exc:
        # Every briefing lists the window's rejections, and each axis's window may live on another worker.
        return [
            DocumentEvent(
                type="rejection",
                path=raw.path,
                sha256=raw.sha256,
                seen_at=seen_at,
                axis=a.name,
                reason=str(exc),
                raw_offset=raw_offset,
            )
            for a in axes
        ]
    return [
        DocumentEvent(
            type="document",
            path=raw.path,
            sha256=raw.sha256,
            seen_at=seen_at,
            axis=name,
            document=doc,
            mtime=raw.mtime,
            raw_offset=raw_offset,
        )
        for name in assign_axes(doc, axes)
    ]


def rejection_reason_label(reason: str) -> str:
    """A low-cardinality label for the rejected-documents metric."""
    lowered = reason.lower()
    for label in ("binary", "limit", "outside", "symlink", "vanished", "decode"):
        if label in lowered:
            return label
    return "parse"
