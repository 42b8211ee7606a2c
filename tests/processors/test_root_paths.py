"""Which paths under the root are watched: the four folders, no hidden or temporary names, nothing that climbs."""

from __future__ import annotations

import pytest

from processors.reasons import REJECTION_CODES
from processors.root_paths import REFUSAL_TEXT, WATCHED, top_folder, watched


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
