"""A raw record, v2 (processors.raw_record): the file's bytes as they are after a short header; it reads to the
RawFile its v1 twin (pydantic's JSON, content as base64) reads to, and a damaged one is refused, never misread."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from processors.models import RawFile
from processors.raw_record import MAGIC, RawRecordError, raw_record, raw_record_of, read_raw


def _model(path: str, content: bytes, size: int, mtime: float, sha256: str) -> RawFile:
    return RawFile(path=path, content=content, size=size, mtime=mtime, sha256=sha256)


def _read(value: bytes) -> tuple[object, ...]:
    try:
        raw = read_raw(value)
    except (ValidationError, RawRecordError) as exc:
        return ("refused", type(exc).__name__)
    return ("read", vars(raw), raw.model_fields_set)


def _v1(raw: RawFile) -> bytes:
    return raw.model_dump_json().encode()


_NAMES = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ['inbox/jay/"quoted".md', "inbox/jay/back\\slash.md", "inbox/tom/推理 ✓.md", "a\nb\tc\x00\x1f\x7f.md", ""]
)
_MTIMES = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(1e9, 2e9)
    | st.sampled_from(
        [0.0, -0.0, 1e16, 1e-5, 86909572234307.62, 1733456789.123456789, math.inf, -math.inf, math.nan]
    )
)


@settings(max_examples=1500, deadline=None)
@given(_NAMES, st.binary(max_size=300), st.integers(0, 2**63 - 1), _MTIMES, st.text(max_size=70))
def test_a_record_reads_as_its_v1_twin_reads(
    path: str, content: bytes, size: int, mtime: float, sha256: str
) -> None:
    raw = _model(path, content, size, mtime, sha256)
    value = raw_record_of(path, content, size, mtime, sha256)
    assert value.startswith(MAGIC)
    assert value.endswith(content)  # the bytes as they are, not base64
    assert value == raw_record(raw)  # the native header is pydantic's
    assert _read(value) == _read(_v1(raw))


@pytest.mark.parametrize(
    "raw",
    [
        RawFile(path="inbox/jay/a.md", content=b"", size=0, mtime=5.0, sha256="", deleted=True),
        RawFile(
            path="inbox/jay/l.md",
            content=b"",
            size=12,
            mtime=5.0,
            sha256="refused-symlink",
            refused="is a symlink",
            refused_code="symlink",
        ),
        RawFile(path="inbox/jay/big.md", content=b"", size=9 << 20, mtime=5.0, sha256="size-9437184"),
        _model("inbox/jay/b.md", b"\xff\xfe\x80 not UTF-8" + bytes(range(256)), 270, 5.5, "x"),
        _model("inbox/jay/z.md", b"\x00" * (5 << 20) + b"!", 5 << 20, 5.5, "x"),
    ],
    ids=["deleted", "refused", "oversized", "every-byte", "over-5-MiB"],
)
def test_deletions_refusals_and_odd_contents_read_as_their_v1_twins(raw: RawFile) -> None:
    assert read_raw(raw_record(raw)) == raw
    assert _read(raw_record(raw)) == _read(_v1(raw))


@pytest.mark.parametrize(
    ("size", "mtime"),
    [(3, 1733456789), (3, True), (2**63, 1.0), (-(2**63) - 1, 1.0)],
    ids=["int-mtime", "bool-mtime", "size-over-int64", "size-under-int64"],
)
def test_an_int_mtime_or_a_size_past_int64_is_written_as_pydantic_writes_it(size: int, mtime: float) -> None:
    args = ("inbox/jay/a.md", b"abc", size, mtime, "x")
    assert raw_record_of(*args) == raw_record(_model(*args))
    assert _read(raw_record_of(*args)) == _read(_v1(_model(*args)))


def test_a_name_that_is_not_utf8_fails_as_pydantic_fails() -> None:
    with pytest.raises(PydanticSerializationError, match="surrogates not allowed"):
        raw_record_of("inbox/jay/\udcff.md", b"abc", 3, 1.0, "x")


_BODY = b"# a note\n\nbody\n"
_RECORD = raw_record_of("inbox/jay/a.md", _BODY, 15, 1733456789.5, "ab" * 32)
_HEADER = _RECORD[len(MAGIC) + 8 : -len(_BODY)]


def _v2(header: bytes, content: bytes = _BODY) -> bytes:
    return MAGIC + struct.pack(">II", len(header), len(content)) + header + content


def test_a_record_is_its_magic_lengths_header_and_bytes() -> None:
    # The layout docs/architecture.md describes, which another client may write.
    assert _v2(_HEADER) == _RECORD
    assert _HEADER.startswith(b'{"path":"inbox/jay/a.md","content":"","size":15,')


@pytest.mark.parametrize("cut", range(1, len(_RECORD)))  # (empty: no magic, unreadable as JSON)
def test_a_record_cut_anywhere_is_refused(cut: int) -> None:
    with pytest.raises(RawRecordError, match="raw record v2"):
        read_raw(_RECORD[:cut])


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (_RECORD + b"x", RawRecordError),  # longer than its lengths say
        (b"\x00PR3" + _RECORD[4:], RawRecordError),  # another magic
        (_v2(_HEADER[:-1]), ValidationError),  # its header is not JSON
        (_v2(_HEADER.replace(b'"size":15', b'"size":"x"')), ValidationError),  # nor a RawFile's
        (_v2(_HEADER.replace(b'"content":""', b'"content":"YWJj"')), RawRecordError),  # content inside it
    ],
    ids=["padded", "magic", "header-not-json", "header-not-a-rawfile", "content-in-header"],
)
def test_a_damaged_record_is_refused(value: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        read_raw(value)


@pytest.mark.parametrize(
    "lengths",
    [(2**32 - 1, 2**32 - 1), (2**32 - 1, len(_BODY)), (len(_HEADER), 2**32 - 1), (0, len(_HEADER + _BODY))],
    ids=["both-past-the-end", "header-past-the-end", "content-past-the-end", "no-header"],
)
def test_lengths_that_do_not_fit_the_value_are_refused_before_anything_is_read(
    lengths: tuple[int, int],
) -> None:
    # Checked against the value's own length first: a u32 of 4 GiB allocates nothing.
    value = MAGIC + struct.pack(">II", *lengths) + _HEADER + _BODY
    with pytest.raises((RawRecordError, ValidationError)):
        read_raw(value)


def test_empty_contents_read_alike_in_v1_and_v2() -> None:
    empty = _model("inbox/jay/e.md", b"", 0, 5.0, "size-0")
    v2 = raw_record(empty)
    assert v2.endswith(b'"refused_code":null}') and struct.unpack_from(">I", v2, 8) == (0,)
    assert read_raw(v2) == read_raw(_v1(empty)) == empty
    assert read_raw(_v1(empty)).content == b"" and read_raw(v2).content == b""
