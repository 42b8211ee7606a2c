"""Stored notes a read could not load whole: never silently absent (a warning, a metric, the briefing's list)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from processors.errors import MissingRowError
from processors.models import Document, Rejection
from processors.reasons import RejectionCode
from processors.summary_parts import SummaryRows, whole_summary
from processors.wire import StoredDocument, load_document
from sinks.metrics import Metrics
from sinks.summary_rows import WholeRow

log = logging.getLogger(__name__)


@dataclass
class Unreadable:
    """The notes one briefing's (or page's) reads could not load: a body frame that does not unpack to its
    declared size or is not UTF-8 (the worker checks only the frame's header), a damaged summary, or a version
    whose `contents` or `source_rows` row is missing."""

    metrics: Metrics | None = None
    reader: str = "briefing"
    by_axis: dict[str, list[Rejection]] = field(default_factory=dict)

    def report(self, path: str, axis: str, error: ValueError) -> Rejection:
        """Log, count and list the note at `path` (read for `axis`); its rejection as the briefing lists it."""
        log.warning("stored note %s (axis %s) cannot be read and is left out: %s", path, axis, error)
        if self.metrics is not None:
            self.metrics.stored_unreadable.labels(reader=self.reader).inc()
        code: RejectionCode = "row_missing" if isinstance(error, MissingRowError) else "damaged"
        listed = Rejection(path=path, reason=f"its stored text cannot be read ({error})", reason_code=code)
        listed_here = self.by_axis.setdefault(axis, [])
        if all(r.path != path for r in listed_here):
            listed_here.append(listed)
        return listed

    def of(self, axis: str) -> list[Rejection]:
        """The notes of `axis` reported: a briefing reads every axis's living document, and lists only its own."""
        return self.by_axis.get(axis, [])


def whole_documents(rows: Sequence[WholeRow], unreadable: Unreadable | None = None) -> list[Document]:
    """Documents from their stored (path, axis, summary rows, body frame) rows; one that cannot be read is
    reported (`unreadable`, else a warning alone) and left out: it must not stop every briefing of its axis."""
    out = []
    for path, axis, summary, body_zst in rows:
        try:
            out.append(whole_document(summary, body_zst))
        except ValueError as exc:
            (unreadable or Unreadable()).report(path, axis, exc)
    return out


def whole_document(summary: SummaryRows, body_zst: bytes | None) -> Document:
    """The document of a stored version's summary rows and body frame; ValueError when it cannot be read."""
    whole = whole_summary(summary)  # raises first when the body's `contents` row is missing
    return load_document(StoredDocument(whole, body_zst or b"", packed=True))
