"""Records of `predigest.documents`, v7: the v4 records of the notes of one parse batch that share a documents
partition, packed into one record under a byte budget (the per-record cost of Kafka and Faust is paid once), and
compressed by the parse processes, each body a zstd frame of its own that the state stores as it is
(processors.wire_frames).

A v4 record is one note on one partition: a small JSON header naming its axes, then the document once, as the
state stores it (text once, sections as offsets into it), so it is stored without decoding, with its source
facts (processors.source_facts) worked out by the parse processes: the window stage, the worker's busiest loop,
only appends them. A packed record's notes are read one by one, so one that does not read is set apart alone.
Older records stay readable, since a rebuild replays whatever the retained topic holds: v5 (the notes
uncompressed), v4 (one note), v3 (no facts: worked out where decoded), v2 (one axis per record) and v1 (a whole
DocumentEvent as JSON); v6 (the bodies inside the shared frames: the worker compresses each as it stores it). Only
v7 is written (docs/architecture.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pydantic_core
from predigest_native import is_utf8, json_string

from processors.fan_out import DocumentEvent, EventFields
from processors.id_titles import titled_ids
from processors.models import Document, DocumentSummary, Kind, built
from processors.source_facts import SourceFacts, document_facts, dump_facts, load_facts, source_facts
from processors.wire_frames import NOTE_RECORD_LIMIT, body_size, pack_body, set_apart, unpack_body
from processors.wire_packed import MAGIC_V5 as MAGIC_V5
from processors.wire_packed import WEIGHT_BYTES as WEIGHT_BYTES
from processors.wire_packed import batch_weight as batch_weight
from processors.wire_packed import is_packed, read_packed
from processors.wire_packed import notes_in as notes_in

MAGIC = b"predigest.documents/v4"  # a note's part of a v7 record; read alone too (a replayed dead letter)
MAGIC_V3 = b"predigest.documents/v3"  # read only: no source facts
MAGIC_V2 = b"predigest.documents/v2"  # read only: one axis per record
_NL = b"\n"
_BODY = {"sections", "text"}  # a Document's fields that are not its summary's (never changed)


class EventHeader(EventFields):
    """A DocumentEvent without its document; for a document, its kind (with `event_time`, what the state indexes)."""

    kind: Kind | None = None


class GroupHeader(EventHeader):
    """A v3 record's header: the fields its rows share, and the axes it is a row of (`axis` stays None)."""

    axes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredDocument:
    """A document as the state keeps it: its summary and its body (text, sections as offsets), as JSON."""

    # A decoded v4 record's summary and body stay the UTF-8 they came as (checked): the state stores them as they
    # are, where a `str` cost a decode and an encode back (~30 µs a note); every reader of them reads either.
    summary_json: str | bytes
    body_json: str | bytes  # its zstd frame when `packed` (a v7 record's, or the state's `body_zst`)
    packed: bool = False

    def body_frame(self) -> bytes:
        """The body as the state stores it: its zstd frame (made here for a record older than v7)."""
        body = self.body_json.encode() if isinstance(self.body_json, str) else self.body_json
        return body if self.packed else pack_body(body)


@dataclass(frozen=True)
class DocumentRecord:
    """One decoded record: what the window stage applies; `facts` of its document when the record carried them."""

    header: EventHeader
    stored: StoredDocument | None = None
    facts: SourceFacts | None = None


def _json(value: object) -> bytes:
    # Compact JSON escapes every newline inside strings, so a record splits on b"\n" safely. The UTF-8 of
    # json.dumps(ensure_ascii=False, separators=(",", ":")), at a third of its cost on a note's body.
    return pydantic_core.to_json(value)


def store_document(doc: Document) -> StoredDocument:
    """The summary and the body of a document; a section whose text is not a slice of the text is kept whole.

    A document without its stated titles (made before notes kept them) gets them here, read from its text."""
    summary, body, _ = _store(doc)
    return StoredDocument(summary.decode(), body.decode())


def _store(doc: Document, stored_body: bytes | None = None) -> tuple[bytes, bytes, bytes]:
    """`store_document` as UTF-8 JSON, and the summary's facts as `dump_facts` writes them (`stored_body`: its body
    as written here, when the parse's compiled pass made it)."""
    if doc.titled is None:
        doc = doc.model_copy(update={"titled": tuple(titled_ids(doc))})
    # The bytes of doc.summary().model_dump_json(), and its facts worked out from its values, not its JSON.
    summary, facts = document_facts(vars(doc))
    return summary, stored_body or _body(doc), facts


def _body(doc: Document) -> bytes:
    """_json({"text": text, "sections": sections}), each section by its offsets in the text where it is a slice."""
    text = doc.text
    sections: list[list[Any]] = []
    cursor = 0
    for s in doc.sections:
        start = _found_at(text, s.text, cursor)
        if start < 0:
            start = text.find(s.text)
        if start < 0:  # line endings other than \n: splitlines() rewrote them
            sections.append([s.number, s.heading, s.level, s.text])
            continue
        end = start + len(s.text)
        sections.append([s.number, s.heading, s.level, start, end])
        cursor = end
    # The text's escapes checked a word at a time natively.
    return b"".join([b'{"text":', _json_string(text), b',"sections":', _json(sections), b"}"])


def _json_string(text: str) -> bytes:
    try:
        return json_string(text)
    except UnicodeEncodeError:  # a lone surrogate (never in decoded bytes): pydantic's own error, as before
        return _json(text)


def _found_at(text: str, part: str, cursor: int) -> int:
    """`text.find(part, cursor)`. A section is nearly always where its first characters next appear (after its
    heading): checked there first, as str.find of a long needle spends ~3 µs preparing its search."""
    at = text.find(part[:32], cursor)
    if at >= 0 and text.startswith(part, at):
        return at
    return text.find(part, cursor)  # linear in the text, however it repeats itself


def load_summary(summary_json: str | bytes) -> DocumentSummary:
    return DocumentSummary.model_validate_json(summary_json)


def load_document(stored: StoredDocument) -> Document:
    """The whole document back, equal to the one that was stored; ValueError for a body that does not read back
    (its readers report it, sinks.unreadable): a frame has no checksum, so a damaged one may unpack to its size as
    UTF-8 JSON of another shape, whose KeyError or TypeError would fail the whole briefing."""
    try:
        return _loaded(stored)
    except (KeyError, TypeError, IndexError, RecursionError) as exc:
        raise ValueError(f"a note's stored body that does not read back as one: {exc!r}"[:300]) from exc


def _loaded(stored: StoredDocument) -> Document:
    body = json.loads(_body_utf8(stored))
    text: str = body["text"]
    sections = [
        {"number": s[0], "heading": s[1], "level": s[2], "text": s[3] if len(s) == 4 else text[s[3] : s[4]]}
        for s in body["sections"]
    ]
    return Document.model_validate({**json.loads(stored.summary_json), "sections": sections, "text": text})


def _body_utf8(stored: StoredDocument) -> bytes | bytearray | str:
    """A stored body's JSON; ValueError unless its frame unpacks to its declared size as UTF-8 (surrogates too)."""
    if not stored.packed:
        return stored.body_json
    body = bytes(unpack_body(stored.body_frame()))
    if not is_utf8(body):
        raise ValueError("a note's stored body that is not UTF-8")
    return body


def _header(ev: DocumentEvent) -> EventHeader:
    return EventHeader.model_construct(**_header_fields(ev))


def _header_fields(ev: DocumentEvent) -> dict[str, Any]:
    return ev.fields() | _document_fields(ev.document)


def _document_fields(doc: Document | None) -> dict[str, Any]:
    if doc is None:
        return {"kind": None}
    # A v1 record's event carries its time only in its document.
    return {"kind": doc.kind, "event_time": doc.event_time}


_GROUP_FIELDS = tuple(GroupHeader.model_fields)


def _group_header(first: DocumentEvent, axes: tuple[str, ...]) -> bytes:
    """The JSON of a group's `GroupHeader`: its first event's fields and its axes, without building the model."""
    fields = {**vars(first), **_document_fields(first.document), "axis": None, "axes": axes}
    return pydantic_core.to_json({k: fields[k] for k in _GROUP_FIELDS}, inf_nan_mode="null")


def encode_events(
    events: Sequence[DocumentEvent], partitions: Mapping[str, int], stored_body: bytes | None = None
) -> list[tuple[bytes, bytes]]:
    """(key, value) of one record per documents partition the events' axes map to (absent: partition 0).

    The events are one raw file's, alike but for their axis (`stored_body`: their document's body as stored, when the
    parse made it). A record's key is its first axis: the producer's default partitioner puts it on that axis's
    partition, which every axis of the record shares.
    """
    groups: dict[tuple[int, str, str, str, int], list[DocumentEvent]] = {}
    for ev in events:
        # Events of other files, versions or kinds never share a record, even on one partition.
        shared_by = (partitions.get(ev.key, 0), ev.path, ev.sha256, ev.type, id(ev.document))
        groups.setdefault(shared_by, []).append(ev)
    bodies: dict[int, bytes] = {}
    out = []
    for group in groups.values():
        first = group[0]
        header = _group_header(first, tuple(ev.key for ev in group))
        body = b""
        if first.type == "document" and first.document is not None:
            body = bodies.get(id(first.document), b"")
            if not body:
                summary_json, body_json, facts = _store(first.document, stored_body)
                # The body last: the window stage splits off the small parts and keeps it whole.
                body = bodies[id(first.document)] = _NL.join([b"", summary_json, facts, body_json])
        out.append((first.key.encode(), b"".join([MAGIC, _NL, header, body])))
    return out


@dataclass(frozen=True)
class FailedNote:
    """A note of a packed record that cannot be read: its v4 record (a v7 record of it if its body frame does
    not unpack), to dead-letter on its own, and why."""

    index: int  # its place among the record's notes
    value: bytes
    error: str


@dataclass(frozen=True)
class Notes:
    """A record's rows (of every note that reads, in order), the notes that do not read (packed records), and how many
    notes it holds (what the dead-letter limits count)."""

    rows: list[DocumentRecord]
    failed: tuple[FailedNote, ...] = ()
    count: int = 1


def decode_notes(value: bytes) -> Notes:
    """The rows of any record, a packed record's unreadable notes set apart; raises ValueError when the record
    cannot be read at all."""
    if not is_packed(value):
        return Notes(decode_rows(value))
    rows: list[DocumentRecord] = []
    failed = []
    packed = read_packed(value)
    view = memoryview(packed.notes)
    for i, (start, end) in enumerate(packed.spans):
        try:
            rows.extend(_note_rows(packed.notes, view, start, end, packed.bodies[i]))
        except ValueError as exc:
            failed.append(FailedNote(i, set_apart(view[start:end], packed.bodies[i], WEIGHT_BYTES), str(exc)))
    return Notes(rows, tuple(failed), len(packed.spans))


def note_records(value: bytes) -> list[bytes]:
    """A packed record's notes, each a v4 record (a v7 one if its body frame does not unpack), as the lengths line
    lists them."""
    packed = read_packed(value)
    view = memoryview(packed.notes)
    return [
        set_apart(view[start:end], body, NOTE_RECORD_LIMIT)
        for (start, end), body in zip(packed.spans, packed.bodies, strict=True)
    ]


def _note_rows(
    notes: bytes | bytearray, view: memoryview, start: int, end: int, body: memoryview | None = None
) -> list[DocumentRecord]:
    """The rows of the note at [start, end) of a record's notes (a v7 note's body its own frame): its parts
    copied out of them once each (a note's ~18 KB were copied three times: out of zstd's buffer, into the note,
    into its parts)."""
    if not notes.startswith(MAGIC + _NL, start, end):
        head = bytes(view[start : min(end, start + 24)])
        raise ValueError(f"a note of a documents record is not a v4 record (starts with {head!r})")
    parts = []
    for _ in range(4):  # as bytes.split(_NL, 4)
        nl = notes.find(_NL, start, end)
        if nl < 0:
            break
        parts.append(bytes(view[start:nl]))
        start = nl + 1
    parts.append(bytes(view[start:end]))
    if body is None:
        return _rows(parts)
    if len(parts) != 5 or parts[4]:
        raise ValueError(
            f"a note of a v7 documents record with a body frame is not a document's ({parts[0]!r})"
        )
    parts[4] = bytes(body)
    return _rows(parts, packed=True)


def to_record(ev: DocumentEvent) -> DocumentRecord:
    """The record an event becomes, without the bytes in between."""
    return DocumentRecord(_header(ev), store_document(ev.document) if ev.document is not None else None)


def decode_rows(value: bytes) -> list[DocumentRecord]:
    """The rows of a v7, v6, v5, v4, v3, v2 or v1 record, one per axis (and note); raises ValueError (pydantic's
    ValidationError is one) when it is none of them, or a note of it does not read (see decode_notes)."""
    if is_packed(value):
        packed = read_packed(value)
        view = memoryview(packed.notes)
        spans = zip(packed.spans, packed.bodies, strict=True)
        return [
            row for (start, end), body in spans for row in _note_rows(packed.notes, view, start, end, body)
        ]
    if value.startswith(b"{"):  # v1: the whole DocumentEvent
        return [to_record(DocumentEvent.model_validate_json(value))]
    parts = value.split(_NL, 4 if value.startswith(MAGIC + _NL) else 3)
    if len(parts) < 2 or parts[0] not in (MAGIC, MAGIC_V3, MAGIC_V2):
        raise ValueError(f"not a documents record (starts with {value[:24]!r})")
    return _rows(parts)


def _rows(parts: list[bytes], packed: bool = False) -> list[DocumentRecord]:
    """The rows of a v4, v3 or v2 record split at its first newlines (`packed`: its body a zstd frame)."""
    if parts[0] == MAGIC_V2:
        header = EventHeader.model_validate_json(parts[1])
        return [DocumentRecord(header, *_stored(header, parts))]
    group = GroupHeader.model_validate_json(parts[1])
    if not group.axes:
        raise ValueError(f"documents record of {group.path} names no axis")
    stored, facts = _carried(group, parts, packed) if parts[0] == MAGIC else _stored(group, parts)
    # The group's fields, every one of them validated: `built` makes each axis's header from them in a fifth of
    # the time of a copy of a constructed one, the window stage's busiest loop.
    shared = {name: getattr(group, name) for name in EventHeader.model_fields}
    return [DocumentRecord(built(EventHeader, shared | {"axis": a}), stored, facts) for a in group.axes]


def _carried(
    header: EventHeader, parts: list[bytes], packed: bool
) -> tuple[StoredDocument | None, SourceFacts | None]:
    """A v4 record's document and its facts, as the parse stage wrote them (its stated titles always there:
    store_document); of its summary, the slim part every briefing of the axis reads is checked readable, and its
    body UTF-8 (when `packed`, its frame's header only: a zstd frame declaring a size within the limit)."""
    if header.type != "document":
        return None, None
    if len(parts) != 5 or header.kind is None or header.event_time is None:
        raise ValueError(f"document record of {header.path} lacks its body, facts, kind or event time")
    facts = load_facts(parts[3])
    # One no version can read (a newer writer's field, a damaged record) is refused here, dead-lettered, not
    # at each briefing: 9 µs, where the whole summary would cost the window stage five times as much.
    load_summary(facts.summary_json)
    # A body frame is checked by its header only (~39 µs a note less than unpacking it): the readers that unpack it
    # report one that does not unpack to its size or is not UTF-8 (sinks.unreadable).
    if packed:
        body_size(parts[4])
    if not is_utf8(parts[2]) or not (packed or is_utf8(parts[4])):
        raise ValueError(f"document record of {header.path} whose summary or body is not UTF-8")
    return StoredDocument(parts[2], parts[4], packed), facts


def _stored(header: EventHeader, parts: list[bytes]) -> tuple[StoredDocument | None, SourceFacts | None]:
    """A v3 or v2 record's document as the state stores it (None for a deletion or a rejection), checked
    readable, and its facts."""
    if header.type != "document":
        return None, None
    if len(parts) != 4 or header.kind is None or header.event_time is None:
        raise ValueError(f"document record of {header.path} lacks its body, kind or event time")
    summary_json = parts[2].decode()
    stored = StoredDocument(summary_json, parts[3].decode())
    # Every briefing of the axis reads this summary: one no version can read (a newer writer's field, a
    # damaged record) is refused here, where the agent skips it with an error, not at each briefing.
    if not _titled(summary_json):
        # Written before notes kept their stated titles: they are read from its text once, here, so that what
        # is stored (and every briefing) has them (the titles only: the body stays as it came).
        stored = StoredDocument(store_document(load_document(stored)).summary_json, stored.body_json)
    # Its facts worked out here, not by the store: a summary read lax (a count of 1.0, "3" or true, kept as
    # written) whose term counts the store cannot read is refused with its note, not with the window's batch.
    return stored, _facts(stored.summary_json)


@lru_cache(maxsize=256)
def _facts(summary_json: str | bytes) -> SourceFacts:
    """The facts of a stored summary, checked as a v4 record's are (`load_facts`); remembered, as `_titled`."""
    try:
        facts = source_facts(summary_json)
    except TypeError as exc:  # a lax count ("3") summed for a length the summary lacks
        raise ValueError(f"the source facts of a documents record do not read ({exc})") from None
    # Through the v4 row's strict types: a lax length ("8", 8.0) or one beyond INTEGER failed the store's batch.
    return load_facts(dump_facts(facts))


@lru_cache(maxsize=256)
def _titled(summary_json: str) -> bool:
    """Raise unless the summary reads, else whether it holds its stated titles; remembered, as a note's records
    (one per partition, or per axis in v2) carry the same summary."""
    return load_summary(summary_json).titled is not None
