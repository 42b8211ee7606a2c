"""A `predigest.raw` record, v2: a magic prefix, the `RawFile`'s JSON with its content emptied, the file's bytes as
they are (v1, the `RawFile`'s JSON with the content as base64, carried 4/3 of the bytes through every hop).

    b"\\x00PR2" | header length (u32, big-endian) | content length (u32) | header (JSON, `"content":""`) | content

JSON never starts with a NUL byte, so a reader tells the two apart by the first byte; both read to the same RawFile.
"""

from __future__ import annotations

import struct

import pydantic_core
from predigest_native import raw_content, raw_file_json
from pydantic import ValidationError

from processors.models import RawFile

MAGIC = b"\x00PR2"
_LENGTHS = struct.Struct(">II")
_START = len(MAGIC) + _LENGTHS.size
_INT64 = range(-(2**63), 2**63)


class RawRecordError(ValueError):
    """A v2 record that is damaged: cut, lengths that do not add up, content inside its header."""


def raw_record(raw: RawFile) -> bytes:
    """The v2 record of a file's `RawFile` (the watcher's, a deletion or a refusal too)."""
    if not raw.deleted and raw.refused is None:
        return raw_record_of(raw.path, raw.content, raw.size, raw.mtime, raw.sha256)
    return _joined(raw.model_copy(update={"content": b""}).model_dump_json().encode(), raw.content)


def raw_record_of(path: str, content: bytes, size: int, mtime: float, sha256: str) -> bytes:
    """The v2 record of a file read whole; its header built natively (pydantic's dump ~20 µs a note, this ~2)."""
    # The float written by pydantic itself: serde_json's digits, and null for what is not finite, as RawFile
    # writes it. Natively only what a stat gives: pydantic writes an int mtime as a float (`5.0`), and a size past
    # int64 (the native call's type).
    header = None
    if type(mtime) is float and type(size) is int and size in _INT64:
        header = raw_file_json(path, b"", size, pydantic_core.to_json(mtime, inf_nan_mode="null"), sha256)
    if header is None:  # else, or a name that is not UTF-8: pydantic writes it, or raises as it always did
        header = (
            RawFile(path=path, content=b"", size=size, mtime=mtime, sha256=sha256).model_dump_json().encode()
        )
    return _joined(header, content)


def _joined(header: bytes, content: bytes) -> bytes:
    return b"".join((MAGIC, _LENGTHS.pack(len(header), len(content)), header, content))


def readable(value: bytes) -> bytes:
    """A record as a person reads it: a v2 record's header and content without its magic and lengths."""
    return value[_START:] if value[: len(MAGIC)] == MAGIC else value


def read_raw(value: bytes) -> RawFile:
    """The `RawFile` of a v2 or a v1 record; ValidationError for a header or a v1 record that is not one,
    RawRecordError for a damaged v2 record."""
    if value[:1] == MAGIC[:1]:
        return _read_v2(value)
    split = raw_content(
        value
    )  # a v1 record as the watcher wrote it: its content decoded natively (~6 µs, not 11)
    if split is not None:
        rest, content = split
        try:
            raw = RawFile.model_validate_json(rest)
        except ValidationError:  # raised again, as pydantic words it, by the record whole
            raw = None
        if raw is not None and raw.content == b"":  # the emptied string was the content's
            vars(raw)["content"] = content  # a model of its own, not yet seen: as if validated with it
            return raw
    return RawFile.model_validate_json(value)


def _read_v2(value: bytes) -> RawFile:
    if value[: len(MAGIC)] != MAGIC or len(value) < _START:
        raise RawRecordError(f"raw record v2: not one (starts {value[:_START]!r}, {len(value)} bytes)")
    header_length, content_length = _LENGTHS.unpack_from(value, len(MAGIC))
    whole = _START + header_length + content_length
    if len(value) != whole:
        raise RawRecordError(
            f"raw record v2: {len(value)} bytes where its lengths say {whole} "
            f"(header {header_length}, content {content_length}): cut or padded"
        )
    raw = RawFile.model_validate_json(value[_START : _START + header_length])
    if raw.content != b"":
        raise RawRecordError("raw record v2: its header holds content")
    vars(raw)["content"] = value[_START + header_length :]  # a model of its own, not yet seen
    return raw
