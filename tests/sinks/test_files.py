"""Briefing files are written whole, next to each other, and leave no temp files behind."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.models import Briefing
from sinks.briefing_json import json_pieces
from sinks.emission_bodies import pack_pieces, unpack_pieces
from sinks.files import BriefingFiles, indented_pieces, pretty_json, pretty_json_bytes
from tests.processors.notes import brief, example_documents
from tests.state_support import SH, empty_briefing

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def test_both_files_are_written_and_no_temp_file_remains(tmp_path: Path) -> None:
    b = empty_briefing(END)
    files = BriefingFiles(tmp_path)
    md, js = files.paths("inference", "2026-09-27-inference-e1prep")
    written = files.ensure("inference", md.stem, b.model_dump_json(by_alias=True), "# md\n")
    assert written == [js, md]
    assert md.read_text() == "# md\n"
    assert Briefing.model_validate_json(js.read_text()) == b
    assert sorted(p.name for p in (tmp_path / "inference").iterdir()) == sorted([md.name, js.name])


def test_a_fresh_briefings_json_file_is_byte_for_byte_the_one_indented_from_its_record(
    tmp_path: Path,
) -> None:
    # The example root's briefing: floats (relevance, similarity), CJK, escapes, empty and nested lists.
    b = brief(example_documents())
    recorded = b.model_dump_json(by_alias=True)
    packed = pack_pieces(json_pieces(b))  # as the record holds it; its file is indented as it is unpacked

    def json_file() -> Iterator[bytes]:
        return indented_pieces(unpack_pieces(packed))

    assert b"".join(json_file()) == pretty_json_bytes(recorded) == pretty_json(recorded).encode()
    files = BriefingFiles(tmp_path)
    assert files.ensure_made("inference", "fresh", json_file, lambda: (b"# md\n",))
    assert (
        files.ensure("inference", "fresh", recorded, "# md\n") == []
    )  # what a repair writes: nothing differs


# JSON values as a briefing holds them: strings with quotes, backslashes, CJK and emoji; numbers; nested lists and
# objects, empty ones too.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.lists(st.integers(0, 400), max_size=6))
def test_the_json_file_indented_from_compact_pieces_cut_anywhere_is_pydantics_own(
    value: object, cuts: list[int]
) -> None:
    compact = pydantic_core.to_json(value)
    at = sorted({min(c, len(compact)) for c in cuts})
    # Unpacked frames come as memoryviews: every other piece is one.
    pieces = [
        compact[a:b] if n % 2 else memoryview(compact)[a:b]
        for n, (a, b) in enumerate(zip([0, *at], [*at, len(compact)], strict=True))
    ]
    assert (
        b"".join(indented_pieces(pieces))
        == pydantic_core.to_json(value, indent=2) + b"\n"
        == pretty_json_bytes(compact)
    )


def test_temp_files_of_an_interrupted_write_are_removed_at_start_and_nothing_else(tmp_path: Path) -> None:
    # Issue 15: a worker killed mid-write left a zero-byte `.…json.<random>` file in the folder for good.
    folder = tmp_path / "inference"
    folder.mkdir()
    old = time.time() - 3600
    left = [
        folder / ".2026-09-27-inference-e1prep.json.k2x_9a0b",
        folder / ".2026-09-27-inference-e1prep.md.abcdefgh",
    ]
    young = folder / ".2026-09-27-inference-e1prep-flush-2220.json.q1w2e3r4"  # maybe another worker's, now
    kept = [
        folder / "2026-09-27-inference-e1prep.json",
        folder / ".notes.txt",  # not a name this writer makes
        folder / ".2026-09-27-inference-e1prep.json.toolong12",
    ]
    for path in [*left, young, *kept]:
        path.write_bytes(b"")
        if path is not young:
            os.utime(path, (old, old))
    BriefingFiles(tmp_path).clean_up(time.time())
    assert [p.exists() for p in left] == [False, False]
    assert young.exists() and all(p.exists() for p in kept)


def test_an_output_folder_that_cannot_be_read_does_not_stop_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 15: one axis's output problem stops that axis only, so the start-up clean-up must not raise.
    (tmp_path / "inference").mkdir()

    def denied(self: Path) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", denied)
    BriefingFiles(tmp_path).clean_up(time.time())
    assert "could not look for temp files" in caplog.text


def test_a_file_that_differs_only_at_its_end_is_written_again_and_an_equal_one_is_not(tmp_path: Path) -> None:
    files = BriefingFiles(tmp_path)
    md, js = files.paths("inference", "b")
    pieces = (b"# md\n", b"x" * 70_000, b"\n")
    assert files.ensure_made("inference", "b", lambda: (b"{}\n",), lambda: pieces) == [js, md]
    for damaged in (md.read_bytes() + b"more", md.read_bytes()[:-1], md.read_bytes()[:-1] + b"!"):
        md.write_bytes(damaged)
        assert files.ensure_made("inference", "b", lambda: (b"{}\n",), lambda: pieces) == [md]
        assert md.read_bytes() == b"".join(pieces)
    assert files.ensure_made("inference", "b", lambda: (b"{}\n",), lambda: pieces) == []


def test_each_files_bytes_are_made_once_whether_it_is_missing_differs_or_holds_them(tmp_path: Path) -> None:
    # A restored emission's Markdown and indented JSON are rendered anew each time their maker is called (seconds
    # at 100k sources): comparing and writing must not render them twice.
    files = BriefingFiles(tmp_path)
    md, js = files.paths("inference", "b")
    pieces = (b"# md\n", b"a" * (3 << 20), b"middle\n", b"z" * 1000)  # a head of over a MiB copied back
    made: list[str] = []

    def maker(name: str, out: tuple[bytes, ...]) -> Callable[[], Iterator[bytes]]:
        def make() -> Iterator[bytes]:  # rendered when called, as a restored emission's Markdown is
            made.append(name)
            return iter(out)

        return make

    def ensure() -> list[Path]:
        return files.ensure_made("inference", "b", maker("json", (b"{}\n",)), maker("md", pieces))

    assert ensure() == [js, md] and made == ["json", "md"]
    md.write_bytes(md.read_bytes().replace(b"middle", b"MIDDLE"))
    made.clear()
    assert ensure() == [md] and made == ["json", "md"]
    assert md.read_bytes() == b"".join(pieces)
    made.clear()
    assert ensure() == [] and made == ["json", "md"]


def test_a_file_replaced_or_cut_while_it_is_rewritten_is_never_left_as_a_mix(tmp_path: Path) -> None:
    # Another worker or a sync tool may replace or truncate the file between the comparison and the rewrite:
    # what matched is copied from the file that was compared, and a file cut short fails the write.
    files = BriefingFiles(tmp_path)
    md, _ = files.paths("inference", "b")
    head, tail = b"HEAD" * 1000, b"new tail\n"
    files.ensure_made("inference", "b", lambda: (b"{}\n",), lambda: (head + b"old tail\n",))

    def replacing() -> Iterator[bytes]:
        yield head  # matches the file on disk
        other = md.with_name("other")
        other.write_bytes(b"HE")
        os.replace(other, md)
        yield tail

    files.ensure_made("inference", "b", lambda: (b"{}\n",), replacing)
    assert md.read_bytes() == head + tail

    def truncating() -> Iterator[bytes]:
        yield head
        os.truncate(md, 2)
        yield b"other tail\n"

    with pytest.raises(OSError, match="shrank"):
        files.ensure_made("inference", "b", lambda: (b"{}\n",), truncating)
    assert md.read_bytes() == b"HE"  # as the other writer left it: nothing renamed over it
