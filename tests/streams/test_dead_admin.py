"""`predigest dead list`'s preview of a letter's value."""

from __future__ import annotations

from processors.models import RawFile
from processors.raw_record import raw_record
from streams.dead_admin import preview


def test_a_v2_raw_letter_is_previewed_from_its_header_not_its_magic_and_lengths() -> None:
    raw = RawFile(path="inbox/jay/a.md", content=b"# A note", size=8, mtime=1.0, sha256="ab")
    shown = preview(raw_record(raw))
    assert shown.startswith('{"path":"inbox/jay/a.md"')
    assert "PR2" not in shown  # the header first: the path is what the operator looks for


def test_other_values_are_previewed_as_they_are() -> None:
    assert preview(b"not a raw file\x01") == "not a raw file·"
    assert preview(None) == "(no value)"
