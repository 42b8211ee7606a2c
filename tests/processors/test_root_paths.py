"""Which paths under the root are watched: the four folders, no hidden or temporary names, nothing that climbs."""

from __future__ import annotations

import pytest

from processors.reasons import REJECTION_CODES
from processors.root_paths import REFUSAL_TEXT, WATCHED, escaped_bytes, text_rel, top_folder, watched


@pytest.mark.parametrize(
    "rel",
    [
        "inbox",
        "inbox/jay/2026-09-27-x.md",
        "paper_cards/1417-2609-19969.md",
        "work-queue/a.md",
        "living/x.md",
    ],
)
def test_the_watched_folders_and_what_is_in_them(rel: str) -> None:
    assert watched(rel) and top_folder(rel) in WATCHED


@pytest.mark.parametrize(
    "rel",
    [
        "other/x.md",
        "inbox/jay/.x.md.swp",
        "inbox/jay/x.md.tmp",
        "inbox/jay/x.md~",
        "inbox/jay/x.md.part",
        "inbox/.obsidian/cache.md",
        "inbox/../../etc/passwd",
        "inbox//x.md",
        "inbox/./x.md",
    ],
)
def test_other_folders_hidden_and_temporary_names_and_climbing_paths_are_not(rel: str) -> None:
    assert not watched(rel)


def test_each_refusal_is_a_rejection_code_the_workers_metric_knows() -> None:
    # The code travels as RawFile.refused_code and becomes the `reason` label as it is.
    assert set(REFUSAL_TEXT) <= set(REJECTION_CODES)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"inbox/jay/2026-12-07-\xff.md", "inbox/jay/2026-12-07-\\xff.md"),
        (b"inbox/jay/\xff\xfe.md", "inbox/jay/\\xff\\xfe.md"),
        (b"inbox/jay/\\xff\xfe.md", "inbox/jay/\\\\xff\\xfe.md"),  # not the line above's name
        (b"inbox/tom\xe9/2026-12-07-x.md", "inbox/tom\\xe9"),  # the folder is what is refused
    ],
)
def test_a_name_that_is_not_utf8_is_shown_escaped_and_its_bytes_found_again(name: bytes, shown: str) -> None:
    rel = name.decode("utf-8", "surrogateescape")  # as os.scandir and os.fsdecode give it
    assert text_rel(rel) == shown
    assert escaped_bytes(shown) == b"/".join(name.split(b"/")[: shown.count("/") + 1])


@pytest.mark.parametrize("rel", ["inbox/jay/café.md", "inbox/jay/a\\b.md", "inbox/jay/2026-12-07-\\x41.md"])
def test_a_utf8_name_is_itself_even_with_backslashes(rel: str) -> None:
    assert text_rel(rel) == rel
    assert escaped_bytes(rel) is None  # \x41 is "A": valid UTF-8, so no escape of a bad name


def test_an_escape_of_bytes_that_are_utf8_together_names_no_bad_file() -> None:
    assert escaped_bytes("inbox/jay/a\\xc3\\xa9.md") is None  # "é": a valid name written with backslashes


@pytest.mark.parametrize(
    "name",
    [
        b"inbox/C:\\jay/2026-12-07-\xff.md",  # a valid folder name with a backslash on the way
        b"inbox/x\\xe9/2026-12-07-\xff.md",  # … one that looks like an escape
        b"inbox/a\\\\b/2026-12-07-\xff.md",  # … one with a doubled backslash
    ],
)
def test_the_folders_on_the_way_to_a_bad_name_are_taken_as_they_are_written(name: bytes) -> None:
    shown = text_rel(name.decode("utf-8", "surrogateescape"))
    assert shown.endswith("/2026-12-07-\\xff.md")
    assert escaped_bytes(shown) == name  # the file itself, not a miss (read as vanished at every rescan)
