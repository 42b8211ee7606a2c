"""The v2 writer (one record per axis) as predigest 0.3 had it: records of retained topics to read back."""

from __future__ import annotations

from collections.abc import Sequence

from processors.fan_out import DocumentEvent
from processors.wire import MAGIC_V2, EventHeader, store_document


def encode_v2(events: Sequence[DocumentEvent]) -> list[tuple[bytes, bytes]]:
    """(key, value) of each event, keyed by its axis, the document in each."""
    out = []
    for ev in events:
        doc = ev.document
        fields = ev.fields()
        if doc is not None:
            fields["event_time"] = doc.event_time
        header = EventHeader.model_construct(**fields, kind=doc.kind if doc is not None else None)
        value = MAGIC_V2 + b"\n" + header.model_dump_json().encode()
        if doc is not None:
            stored = store_document(doc)
            # A stored document's summary and body are text (a decoded record's are its bytes).
            assert isinstance(stored.summary_json, str) and isinstance(stored.body_json, str)
            value += b"\n" + stored.summary_json.encode() + b"\n" + stored.body_json.encode()
        out.append((ev.key.encode(), value))
    return out
