"""The parse stage as one pure function: a raw record's bytes in, documents records out (runs in a worker process)."""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from processors.errors import PROCESS_EXITS
from processors.fan_out import Refusal, route_read, to_every_axis
from processors.models import AxisSpec, RawFile
from processors.raw_record import RawRecordError, read_raw
from processors.reasons import RejectionCode, WarningCode
from processors.wire import encode_events
from processors.wire_frames import Frame, join_frames, pack_frames


@dataclass(frozen=True)
class RouteParams:
    """What routing needs besides the record; sent to a worker process once."""

    axes: tuple[AxisSpec, ...]
    zone: ZoneInfo
    max_bytes: int
    message_limit: int  # a record over this is replaced by rejections ("split the file")
    # The documents partition of each axis (its key's, by Kafka's default partitioner): a note's axes on one
    # partition share a record. Empty: one partition, so one record per note.
    partitions: Mapping[str, int] = field(default_factory=dict)
    # A batch's notes of one documents partition share a v7 record up to this many bytes (a larger note alone).
    record_bytes: int = 384 * 1024


@dataclass(frozen=True)
class Routed:
    """One raw record routed: the documents records, and what the worker logs and counts about it."""

    path: str
    records: tuple[tuple[bytes, bytes], ...] = ()
    unreadable: str | None = None  # the raw record is not a RawFile (or a damaged v2 record): skipped
    error: str | None = None  # routing raised (a bug): the file became a rejection; the traceback
    rejection: str | None = None  # the reason the file was rejected
    rejection_code: RejectionCode | None = None  # and its code (the metric label)
    refused: bool = False  # the watcher refused it (and counted it already)
    warnings: tuple[str, ...] = ()
    warning_codes: tuple[WarningCode, ...] = ()  # one per warning (the metric labels)
    too_big: str | None = None  # the parsed document was over the message limit: rejected
    # In a parse process, a chunk's records are compressed together (`packed`): they travel as the frames of
    # its first note, and each note keeps only how many records it had.
    frames: tuple[Frame, ...] = ()
    packed: int = 0


def route_file(raw: RawFile, params: RouteParams, seen_at: datetime, raw_offset: int | None) -> Routed:
    """Parse, fan out and encode one file; a bug in routing turns it into a rejection, never a crash."""
    error: str | None = None
    stored_body: bytes | None = None  # the document's body as stored, made by the parse
    try:
        events, stored_body = route_read(
            raw,
            params.axes,
            zone=params.zone,
            max_bytes=params.max_bytes,
            seen_at=seen_at,
            raw_offset=raw_offset,
        )
    except (
        BaseException
    ) as exc:  # a Rust panic from the compiled pass is a BaseException: the note's own fault
        if isinstance(exc, PROCESS_EXITS):
            raise
        error = traceback.format_exc()
        refusal = Refusal(f"{raw.path}: could not be routed ({exc})", "parse")
        events = to_every_axis(raw, seen_at, params.axes, raw_offset, params.zone, refusal)
    doc = next((ev.document for ev in events if ev.document is not None), None)
    records = encode_events(events, params.partitions, stored_body)
    too_big = None
    if any(len(value) > params.message_limit for _, value in records):
        too_big = (
            f"{raw.path}: parsed document is over the message limit of {params.message_limit} bytes; "
            "split the file"
        )
        events = to_every_axis(raw, seen_at, params.axes, raw_offset, params.zone, Refusal(too_big, "limit"))
        records = encode_events(events, params.partitions)
    rejected = next((ev for ev in events if ev.type == "rejection"), None)
    return Routed(
        path=raw.path,
        records=tuple(records),
        error=error,
        rejection=None if rejected is None else rejected.reason or "rejected",
        rejection_code=None if rejected is None else rejected.reason_code or "parse",
        refused=bool(raw.refused),
        warnings=doc.warnings if doc is not None else (),
        warning_codes=doc.warning_codes if doc is not None else (),
        too_big=too_big,
    )


def route_value(value: bytes, params: RouteParams, seen_at: datetime, raw_offset: int | None) -> Routed:
    """`route_file` of a `predigest.raw` record's bytes."""
    try:
        raw = read_raw(value)
    except (ValidationError, RawRecordError) as exc:  # never readable, however often it is delivered
        return Routed(path="", unreadable=str(exc).splitlines()[0])
    return route_file(raw, params, seen_at, raw_offset)


def refuse_value(
    value: bytes, params: RouteParams, seen_at: datetime, raw_offset: int | None, why: str
) -> Routed:
    """A raw record the parser could not finish (its process died or hung on it), as a rejection."""
    try:
        raw = read_raw(value)
    except (ValidationError, RawRecordError) as exc:
        return Routed(path="", unreadable=str(exc).splitlines()[0])
    refusal = Refusal(f"{raw.path}: could not be routed ({why})", "parse")
    events = to_every_axis(raw, seen_at, params.axes, raw_offset, params.zone, refusal)
    return Routed(
        path=raw.path,
        records=tuple(encode_events(events, params.partitions)),
        error=why,
        rejection=refusal.reason,
        rejection_code=refusal.code,
    )


def route_values(
    values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """`route_value` of each (value, raw offset), in order: one call per chunk of a batch."""
    return [route_value(v, params, seen_at, offset) for v, offset in values]


def packed(routed: Sequence[Routed], params: RouteParams) -> list[Routed]:
    """A chunk's routed notes with their records compressed together, as frames on the first (in a parse
    process: the worker neither compresses them nor unpickles them whole)."""
    records = [record for r in routed for record in r.records]
    out = [_unloaded(r) for r in routed]
    if out:
        out[0] = replace(out[0], frames=tuple(pack_frames(records, params.partitions, params.record_bytes)))
    return out


def _unloaded(r: Routed) -> Routed:
    """`replace(r, records=(), packed=len(r.records))`: a copy of its fields, where dataclasses.replace walked
    them and called __init__ (~8 µs a note)."""
    out = object.__new__(Routed)
    out.__dict__.update(vars(r), records=(), packed=len(r.records))
    return out


def documents_records(routed: Sequence[Routed], params: RouteParams) -> list[tuple[bytes, bytes]]:
    """The documents records of a batch's routed files: their notes' frames joined per partition, in order
    (v7); the records of notes routed here (inline, or refused) are packed here."""
    frames: list[Frame] = []
    loose: list[tuple[bytes, bytes]] = []
    for r in routed:
        if r.frames and loose:
            frames.extend(pack_frames(loose, params.partitions, params.record_bytes))
            loose = []
        frames.extend(r.frames)
        loose.extend(r.records)
    frames.extend(pack_frames(loose, params.partitions, params.record_bytes))
    return join_frames(frames, params.record_bytes)
