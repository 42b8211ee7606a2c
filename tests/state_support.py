"""Builders for tests of the sinks: records through the state's real write path, whole documents and events back,
and a briefing to record or write."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.documents import parse_document
from processors.fan_out import DocumentEvent
from processors.models import AxisSpec, Briefing, Document, RawFile, WindowBounds
from processors.window import window_bounds
from processors.wire import DocumentRecord, EventHeader, load_document, store_document
from sinks.state import Position, StateStore

SH = ZoneInfo("Asia/Shanghai")


def parsed(path: str, text: str) -> Document:
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


def document_record(axis: str, doc: Document, raw_offset: int | None) -> DocumentRecord:
    header = EventHeader(
        type="document",
        path=doc.path,
        sha256=doc.sha256,
        seen_at=doc.event_time,
        axis=axis,
        raw_offset=raw_offset,
        kind=doc.kind,
        event_time=doc.event_time,
    )
    return DocumentRecord(header, store_document(doc))


def deletion_record(axis: str, path: str, when: datetime, raw_offset: int | None) -> DocumentRecord:
    return DocumentRecord(
        EventHeader(type="deletion", path=path, sha256="", seen_at=when, axis=axis, raw_offset=raw_offset)
    )


def put_document(
    state: StateStore, axis: str, doc: Document, *, raw_offset: int | None, position: Position | None = None
) -> bool:
    """Store one version as the window agent would; True if a briefing now sees it."""
    return state.apply_batch([(document_record(axis, doc, raw_offset), position)])[0]


def delete_path(state: StateStore, axis: str, path: str, when: datetime, *, raw_offset: int | None) -> bool:
    """Apply a deletion as the window agent would; True unless the axis never held the path or holds a newer one."""
    return state.apply_batch([(deletion_record(axis, path, when, raw_offset), None)])[0]


def window_documents(state: StateStore, axis: str, window: WindowBounds) -> list[Document]:
    """The window's current documents, whole: the summaries a briefing ranks, then their versions loaded."""
    summaries = state.window_summaries(axis, window)
    loader = state.loader(axis, {d.path: d.sha256 for d in summaries})
    try:
        return loader.load([d.path for d in summaries])
    finally:
        loader.close()


def to_event(record: DocumentRecord) -> DocumentEvent:
    """The DocumentEvent a documents record was made from (the document decoded whole)."""
    document = load_document(record.stored) if record.stored is not None else None
    return DocumentEvent.model_construct(**record.header.fields(), document=document)


def empty_briefing(end: datetime, generated_at: datetime | None = None) -> Briefing:
    """The close briefing of inference's 24 h window ending at `end`, which held no document."""
    return assemble_briefing(
        BriefingRequest(
            axis=AxisSpec(name="inference"),
            trigger="close",
            window=window_bounds(end, timedelta(hours=24)),
            generated_at=generated_at or end,
            zone=SH,
            documents=[],
        )
    )
