"""The v3 writer (one record per note and partition, no source facts) as predigest wrote it before v4."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from processors.fan_out import DocumentEvent
from processors.wire import MAGIC_V3, GroupHeader, store_document


def encode_v3(events: Sequence[DocumentEvent], partitions: Mapping[str, int]) -> list[tuple[bytes, bytes]]:
    """(key, value) of one record per documents partition the events' axes map to, the document once in each."""
    groups: dict[tuple[int, str, str, str, int], list[DocumentEvent]] = {}
    for ev in events:
        groups.setdefault(
            (partitions.get(ev.key, 0), ev.path, ev.sha256, ev.type, id(ev.document)), []
        ).append(ev)
    out = []
    for group in groups.values():
        first, doc = group[0], group[0].document
        fields = first.fields() | {"axis": None}
        if doc is not None:
            fields["event_time"] = doc.event_time
        kind = doc.kind if doc is not None else None
        header = GroupHeader.model_construct(**fields, kind=kind, axes=tuple(ev.key for ev in group))
        value = MAGIC_V3 + b"\n" + header.model_dump_json().encode()
        if first.type == "document" and doc is not None:
            stored = store_document(doc)
            # A stored document's summary and body are text (a decoded record's are its bytes).
            assert isinstance(stored.summary_json, str) and isinstance(stored.body_json, str)
            value += b"\n" + stored.summary_json.encode() + b"\n" + stored.body_json.encode()
        out.append((first.key.encode(), value))
    return out
