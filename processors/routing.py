"""From a raw file to the events the window stage stores: one per axis, a deletion, or a rejection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo

from processors.axes import assign_axes
from processors.documents import is_blank, parse_document
from processors.errors import ParseError
from processors.models import AxisSpec, Document, Frozen, RawFile
from processors.tokens import axis_terms

REJECTED_KEY = "_rejected"

# Phrases of the rejection reasons (processors.documents, the watcher's refusals) → metric label.
_REJECTION_LABELS = (
    ("nul bytes", "binary"),
    ("over the limit", "limit"),
    ("message limit", "limit"),
    ("is empty", "empty"),
    ("outside the root", "outside"),  # before "symlink": the reason names the symlinked folder
    ("symlink", "symlink"),
    ("not a regular file", "special"),
    ("unreadable", "unreadable"),
    ("vanished", "vanished"),
)
# Phrases of a kept document's warnings → metric label.
_WARNING_LABELS = (
    ("not valid utf-", "decode"),
    ("front matter", "front_matter"),
    ("no date stamp", "no_stamp"),
    ("arxiv id", "arxiv_id"),
)


class EventFields(Frozen):
    """What every documents record says besides its document (DocumentEvent, and v2's EventHeader)."""

    type: Literal["document", "deletion", "rejection"]
    path: str
    sha256: str
    seen_at: datetime
    axis: str | None = None
    reason: str | None = None
    mtime: float | None = None  # the file's mtime, for the end-to-end lag metric
    # Offset of the raw record on `predigest.raw`. Raw is keyed by path, so this orders the versions of
    # one path totally (content cannot: a file can be restored to earlier bytes). None: from before 0.2.
    raw_offset: int | None = None

    def fields(self) -> dict[str, Any]:
        """The shared fields' values, to build the other kind of event from."""
        return {name: getattr(self, name) for name in EventFields.model_fields}


class DocumentEvent(EventFields):
    """What `predigest.documents` carries, keyed by axis: one axis's view of one raw record."""

    document: Document | None = None

    @property
    def key(self) -> str:
        return self.axis or REJECTED_KEY


@lru_cache(maxsize=8)
def keyword_terms(axes: tuple[AxisSpec, ...]) -> frozenset[str]:
    """Every index term of every configured axis keyword (and axis name)."""
    return frozenset(t for a in axes for t in axis_terms(a.keywords, a.name))


def to_every_axis(
    type: Literal["deletion", "rejection"],
    raw: RawFile,
    seen_at: datetime,
    axes: Sequence[AxisSpec],
    raw_offset: int | None,
    reason: str | None = None,
) -> list[DocumentEvent]:
    """One event per axis: every briefing lists the window's deletions and rejections, and each axis's
    window may live on another worker."""
    return [
        DocumentEvent(
            type=type,
            path=raw.path,
            sha256=raw.sha256,
            seen_at=seen_at,
            axis=a.name,
            reason=reason,
            raw_offset=raw_offset,
        )
        for a in axes
    ]


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
        return to_every_axis("deletion", raw, seen_at, axes, raw_offset)
    try:
        doc = parse_document(raw, zone=zone, max_bytes=max_bytes, keep_terms=keyword_terms(tuple(axes)))
        if is_blank(raw.content):
            # Usually a note caught between create and first write; its next version is stored as usual.
            raise ParseError(f"{raw.path}: file is empty; nothing to brief")
    except ParseError as exc:
        return to_every_axis("rejection", raw, seen_at, axes, raw_offset, reason=str(exc))
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


def _label(text: str, path: str, table: tuple[tuple[str, str], ...], default: str) -> str:
    # Reasons start with the path; a path like `inbox/jay/binary-search.md` must not pick the label.
    lowered = text.removeprefix(f"{path}: ").lower() if path else text.lower()
    return next((label for phrase, label in table if phrase in lowered), default)


def rejection_reason_label(reason: str, path: str = "") -> str:
    """A low-cardinality label for `predigest_documents_rejected_total`."""
    return _label(reason, path, _REJECTION_LABELS, "parse")


def warning_reason_label(warning: str) -> str:
    """A low-cardinality label for `predigest_documents_warned_total` (kept documents)."""
    return _label(warning, "", _WARNING_LABELS, "other")
