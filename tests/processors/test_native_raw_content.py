"""A parse process reads a raw record's content natively (processors.raw_record.read_raw,
predigest_native.raw_content): every record reads as pydantic reads it whole, the same file or the same error."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import raw_content
from pydantic import ValidationError

from processors.models import RawFile
from processors.raw_record import read_raw


def _read(read: object, value: bytes) -> tuple[object, ...]:
    try:
        raw = read(value)  # type: ignore[operator]
    except ValidationError as exc:
        return ("refused", str(exc))
    return ("read", vars(raw), raw.model_fields_set)


def _record(text: bytes, rest: bytes = b'"size":1,"mtime":1.0,"sha256":"x"') -> bytes:
    return b'{"path":"inbox/jay/a.md","content":"' + text + b'",' + rest + b"}"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_a_record_the_watcher_writes_reads_as_pydantic_reads_it(content: bytes) -> None:
    raw = RawFile(path="inbox/jay/推理.md", content=content, size=len(content), mtime=1.5, sha256="s")
    value = raw.model_dump_json().encode()
    assert raw_content(value) is not None  # read natively, in blocks of 32 characters and a tail
    assert _read(read_raw, value) == _read(RawFile.model_validate_json, value)


# A character of the URL-safe alphabet changed to one of another alphabet, padding, a quote, a backslash or any byte.
_CHANGES = st.sampled_from([*b'=+/"\\ A_-\x00\x80', *range(256)])


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=120), st.lists(st.tuples(st.integers(0, 200), _CHANGES), max_size=3), st.booleans())
def test_a_damaged_content_reads_or_fails_as_pydantic_s(
    content: bytes, changes: list[tuple[int, int]], strip: bool
) -> None:
    text = bytearray(base64.urlsafe_b64encode(content))
    for at, byte in changes:
        if text:
            text[at % len(text)] = byte
    value = _record(bytes(text).rstrip(b"=") if strip else bytes(text))
    assert _read(read_raw, value) == _read(RawFile.model_validate_json, value)


@pytest.mark.parametrize(
    "value",
    [
        _record(b"YWJj", b'"content":"ZGVm","size":1,"mtime":1.0,"sha256":"x"'),  # twice: the last one counts
        _record(b"YWJj", b'"\\u0063ontent":"ZGVm","size":1,"mtime":1.0,"sha256":"x"'),  # twice, once escaped
        # twice, the last one empty: pydantic's content is b"", which the emptied record alone cannot tell apart
        _record(b"YWJj", b'"content":"","size":1,"mtime":1.0,"sha256":"x"'),
        _record(b"YWJj", b'"\\u0063ontent":"","size":1,"mtime":1.0,"sha256":"x"'),
        _record(b"YWJj", b'"size":1,"mtime":1.0,"sha256":"x","content" : ""'),
        _record(b"YWJj", b'"size":1,"mtime":1.0,"sha256":"\\u0078"'),  # an escape elsewhere
        _record(b"YWJj", b'"size":"1","mtime":1,"sha256":"x"'),  # lax numbers
        _record(b"YWJj", b'"size":1,"mtime":1.0,"sha256":"x","extra":1'),  # a field it does not know
        _record(b"YWJj", b'"size":1,"mtime":1.0'),  # one missing
        _record(b"YW+j"),  # the standard alphabet
        _record(b"YR=="),  # bits past the last byte
        _record(b"YWI="),  # one pad, canonical
        _record(b"YWJ="),  # one pad, bits past the last byte
        _record(b"YWJj===="),  # padding beyond two
        _record(b"YQ=A"),  # padding inside
        _record(b"Y==="),  # three pads
        _record(b"===="),  # padding alone
        _record(b"YWJjZA"),  # unpadded
        b'{"path":"a", "content": "YWJj","size":1,"mtime":1.0,"sha256":"x"}',  # spaces
        b'{"path":"a","content":"YWJj"',  # cut short
        b'["content":"YWJj"]',
    ],
)
def test_other_records_read_as_pydantic_reads_them(value: bytes) -> None:
    assert _read(read_raw, value) == _read(RawFile.model_validate_json, value)
