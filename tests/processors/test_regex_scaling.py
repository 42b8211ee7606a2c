"""Every regular expression in processors/ finishes on long adversarial input (issue 15: 500 spaces before an arXiv id
took 93 s in one pattern; a run of white space or of `-a` took quadratic time in others).

The patterns are found in the source (tests/processors/regex_cases.py), so a new one is covered without being
listed. Here each runs over its adversarial inputs at 8,000 characters under a hang guard, where backtracking that
splits a run every way (the 93 s pattern on 500 spaces) would never end; how their time grows with the input,
target linear, is measured by `make bench` (`bench.parse_growth`, the `regex` figure).
"""

from __future__ import annotations

import pytest

from tests.processors.regex_cases import EXTRA_PREFIXES, PATTERNS, Found, inputs

LONG = 8_000  # characters: 4x the largest input the timed ratio used


def test_every_pattern_in_processors_is_found() -> None:
    # A guard on the finder itself: these modules are full of patterns, and each one must be under test.
    where = {f.where.split(":")[0] for f in PATTERNS}
    assert {
        "arxiv_ids",
        "id_titles",
        "discrepancies",
        "key_points",
        "living_doc",
        "units",
        "relevance",
    } <= where
    assert len(PATTERNS) >= 80
    used = {key for key in EXTRA_PREFIXES if any(key in f.pattern.pattern for f in PATTERNS)}
    assert used == set(EXTRA_PREFIXES), "an extra prefix no longer matches any pattern"


@pytest.mark.timeout(60)  # a hang guard, not a figure: the slowest pattern takes ~10 s alone
@pytest.mark.parametrize("found", PATTERNS, ids=[f.where for f in PATTERNS])
def test_pattern_finishes_on_long_adversarial_input(found: Found) -> None:
    for _case, text in inputs(found.pattern, LONG):
        for _m in found.pattern.finditer(text):
            pass  # finishing is the check: the timeout above fails a pattern that backtracks without end
