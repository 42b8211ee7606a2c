"""The backfill's raw records are built natively (processors.raw_json, predigest_native.raw_file_json): each is
the bytes pydantic writes for the same RawFile, whatever the name, the bytes and the stat."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticSerializationError

from processors.models import RawFile
from processors.raw_json import raw_record_json


def _pydantic(path: str, content: bytes, size: int, mtime: float, sha256: str) -> bytes:
    return (
        RawFile(path=path, content=content, size=size, mtime=mtime, sha256=sha256).model_dump_json().encode()
    )


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
def test_a_record_is_the_bytes_pydantic_writes(
    path: str, content: bytes, size: int, mtime: float, sha256: str
) -> None:
    assert raw_record_json(path, content, size, mtime, sha256) == _pydantic(
        path, content, size, mtime, sha256
    )


@pytest.mark.parametrize(
    "content",
    [
        b"",
        "推理\n".encode(),
        b"\xff\xfe\x80 not UTF-8",
        bytes(range(256)) * 3,
        b"x" * 31,
        b"\x00" * (5 << 20) + b"!",
    ],
    ids=["empty", "utf-8", "invalid-utf-8", "every-byte", "not-a-multiple-of-3", "over-5-MiB"],
)
def test_odd_contents_are_written_as_pydantic_writes_them(content: bytes) -> None:
    args = ("inbox/jay/a.md", content, len(content), 1733456789.5, "e3b0c442" * 8)
    assert raw_record_json(*args) == _pydantic(*args)


def test_a_name_that_is_not_utf8_fails_as_pydantic_fails() -> None:
    # A lone surrogate (an undecodable byte in a file name): pydantic's own error, as before.
    with pytest.raises(PydanticSerializationError, match="surrogates not allowed"):
        raw_record_json("inbox/jay/\udcff.md", b"abc", 3, 1.0, "x")


@pytest.mark.parametrize(
    ("size", "mtime"),
    [(3, 1733456789), (3, True), (2**63, 1.0), (-(2**63) - 1, 1.0)],
    ids=["int-mtime", "bool-mtime", "size-over-int64", "size-under-int64"],
)
def test_an_int_mtime_or_a_size_past_int64_is_written_as_pydantic_writes_it(size: int, mtime: float) -> None:
    # The stat's own values are a float and an int64, but the signature lets any int through: pydantic writes an
    # int mtime as a float (1733456789.0), and any int as a size.
    args = ("inbox/jay/a.md", b"abc", size, mtime, "x")
    assert raw_record_json(*args) == _pydantic(*args)
