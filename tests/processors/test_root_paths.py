"""Which paths under the root are watched: the four folders, no hidden or temporary names, nothing that climbs."""

from __future__ import annotations

import itertools

import pytest

from processors.reasons import REJECTION_CODES
from processors.root_paths import REFUSAL_TEXT, WATCHED, fs_rel, text_rel, top_folder, watched


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


def _fs(name: bytes) -> str:
    return name.decode("utf-8", "surrogateescape")  # as os.scandir and os.fsdecode give it


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"inbox/jay/2026-12-07-\xff.md", "inbox/jay/2026-12-07-\\xff.md"),
        (b"inbox/jay/\xff\xfe.md", "inbox/jay/\\xff\\xfe.md"),
        (b"inbox/jay/\\xff\xfe.md", "inbox/jay/\\\\xff\\xfe.md"),  # not the line above's name
        (b"inbox/tom\xe9/2026-12-07-x.md", "inbox/tom\\xe9/2026-12-07-x.md"),  # each file under a bad folder
        (b"inbox/C:\\jay/2026-12-07-\xff.md", "inbox/C:\\jay/2026-12-07-\\xff.md"),  # a backslash on the way
        (b"inbox/a\\\\b/2026-12-07-\xff.md", "inbox/a\\\\b/2026-12-07-\\xff.md"),  # … a doubled one
    ],
)
def test_a_name_that_is_not_utf8_is_shown_escaped_and_its_bytes_found_again(name: bytes, shown: str) -> None:
    assert text_rel(_fs(name)) == shown
    assert fs_rel(shown) == _fs(name)


@pytest.mark.parametrize(
    "rel",
    ["inbox/jay/café.md", "inbox/jay/a\\b.md", "inbox/jay/2026-12-07-\\x41.md", "inbox/jay/a\\xc3\\xa9.md"],
)
def test_a_utf8_name_is_itself_even_with_backslashes(rel: str) -> None:
    # \x41 is "A", \xc3\xa9 "é": valid UTF-8, so no escape of a bad name
    assert text_rel(rel) == rel
    assert fs_rel(rel) == rel


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"inbox/jay/a\\xff.md", "inbox/jay/a\\\\xff.md"),  # typed with a backslash: beside a\xff.md's key
        (b"inbox/jay/a\\\\xff.md", "inbox/jay/a\\\\\\\\xff.md"),  # and the line above's
        (b"inbox/x\\xe9/2026-12-07-y.md", "inbox/x\\\\xe9/2026-12-07-y.md"),  # a folder so named
    ],
)
def test_a_utf8_name_that_reads_as_a_bad_name_s_escape_is_escaped_itself(name: bytes, shown: str) -> None:
    # Keyed as written, it took the bad file's key: the bad file was never listed while it was there.
    assert text_rel(_fs(name)) == shown
    assert fs_rel(shown) == _fs(name)


def test_no_two_names_share_a_key() -> None:
    # Every name of up to five of these bytes: backslashes, the letters of an escape, bytes that are not UTF-8
    # alone and two that are UTF-8 together.
    keys: dict[str, bytes] = {}
    for n in range(1, 6):
        for letters in itertools.product([b"\\", b"x", b"f", b"9", b"\xff", b"\xc3", b"\xa9"], repeat=n):
            name = b"".join(letters)
            key = text_rel(_fs(name))
            assert keys.setdefault(key, name) == name
            assert fs_rel(key) == _fs(name)
