"""D-items stay bounded per note: a hostile note (issue 15) cannot stall a briefing or flood its 三."""

from collections import Counter

import pytest

from processors.discrepancies import (
    MAX_FUTURE_PER_NOTE,
    MAX_ITEMS,
    flagged_and_unsourced,
    future_id_hits,
    number_items,
    screen,
    version_conflicts,
)
from processors.discrepancy_keys import DNumbers
from processors.id_conflicts import id_conflicts
from processors.living_doc import parse_living_doc
from processors.units import units_of
from processors.writer_flags import MAX_FLAGS_PER_NOTE
from tests.processors.notes import SH, hostile_id_note, living, note

# A hang guard, not a figure: a worst-case input (~2 s now; the uncapped passes stalled a briefing).
pytestmark = pytest.mark.timeout(120)


def test_a_note_with_50000_ids_and_thousands_of_conflicting_titles_yields_a_few_d_items() -> None:
    doc = note("inbox/jay/2026-09-27-1000-hostile.md", hostile_id_note())
    assert len(doc.arxiv_ids) > 50_000 and len(doc.titled or ()) >= 2500
    units = units_of(doc, "inference", 4, 1.0)
    screening = screen(
        id_conflicts([*(doc.titled or ()), *(doc.titled or ())], "zh"),
        future_id_hits([doc], SH),
        lambda docs: {d.path: doc for d in docs},
        (set(doc.arxiv_ids), set(), set()),
        (SH, "zh"),
    )
    versions = version_conflicts(units, parse_living_doc(living()), "zh")
    flagged = flagged_and_unsourced(units, {}, "zh")
    items = number_items(
        [*versions, *screening.id_items, *screening.future_items, *flagged], DNumbers({}, 194)
    )

    kinds = Counter(f.kind for f in flagged)
    assert len(screening.future_items) == MAX_FUTURE_PER_NOTE
    assert len(versions) <= 2  # one product's releases against the living document: a changelog, not 2,000
    assert kinds["flagged"] == MAX_FLAGS_PER_NOTE
    # "Fluid-Guided … for LLM Inference" under 500 ids is a label, not a typo; 2609.00001 under the next
    # titles (up to the per-note cap) is one discrepancy.
    assert [f.key for f in screening.id_items] == ["id-titles:2609.00001"]
    assert len(items) <= MAX_ITEMS and items[0].id == "D195"
