"""A file's raw record as JSON, the bytes `RawFile.model_dump_json().encode()` writes, built in one native call."""

from __future__ import annotations

import pydantic_core
from predigest_native import raw_file_json

from processors.models import RawFile

_INT64 = range(-(2**63), 2**63)


def raw_record_json(path: str, content: bytes, size: int, mtime: float, sha256: str) -> bytes:
    """The record of a file read whole; pydantic's dump and encode cost the backfill ~23 µs a note, this ~3."""
    # The float written by pydantic itself: serde_json's digits (Rust's own formatting ties another way), and null
    # for what is not finite, as RawFile writes it. Natively only what a stat gives: pydantic writes an int mtime
    # as a float (`5.0`, where to_json writes `5`), and a size past int64 (the native call's type).
    value = None
    if type(mtime) is float and type(size) is int and size in _INT64:
        value = raw_file_json(path, content, size, pydantic_core.to_json(mtime, inf_nan_mode="null"), sha256)
    if value is None:  # else, or a name that is not UTF-8: pydantic writes it, or raises as it always did
        value = (
            RawFile(path=path, content=content, size=size, mtime=mtime, sha256=sha256)
            .model_dump_json()
            .encode()
        )
    return value
