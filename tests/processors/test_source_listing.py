"""The window's listing (processors.sources.SourceListing): what the briefing lists of each source, and its cost."""

from __future__ import annotations

import gc
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone

import pytest

from processors.errors import ProcessorError
from processors.increment_search import Found
from processors.models import DocumentSummary, Relevance, SourceEntry, built
from processors.near_duplicates import DuplicateOf
from processors.sources import AccountContext, SourceListing, source_entry
from processors.window_rows import SourceRow

AXIS = "inference"
STAMP = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)


def _doc(i: int, **fields: object) -> DocumentSummary:
    values: dict[str, object] = {
        "path": f"inbox/jay/2026-09-27-{i}.md",
        "sha256": f"{i:064x}",
        "writer": "jay",
        "kind": "inbox",
        "event_time": STAMP + timedelta(minutes=i),
        "bytes": 100 + i,
        "title": f"note {i}",
        "text_hash": f"{i:064x}",
        "arxiv_ids": (f"2609.{i:05d}",),
    }
    return DocumentSummary.model_validate({**values, **fields})


def _relevance(score: float, terms: tuple[str, ...] = ("kv", "cache")) -> Relevance:
    return built(Relevance, {"label": "中", "code": "medium", "stars": 2, "score": score, "terms": terms})


def _accounts(listing: SourceListing) -> list[SourceEntry]:
    found = Found(units=[], candidates=[], chosen=[], increments=[])
    return listing.accounts(found, AccountContext(AXIS, (), {}, "zh")).sources


def test_each_source_is_listed_as_it_was_read_in_window_order() -> None:
    dup = DuplicateOf(kept="inbox/jay/2026-09-27-0.md", kind="near", similarity=0.91, matched="x")
    docs = [
        _doc(0),
        _doc(1, title="标题 with an emoji 🧪", writer=None),
        _doc(2, event_time=datetime(2026, 9, 27, 20, 0, tzinfo=timezone(timedelta(hours=8)))),
        _doc(3, warnings=("front matter unreadable",), warning_codes=("front_matter",)),
        _doc(4, kind="baseline", baseline_axis=AXIS, writer=""),
    ]
    # Equal scores but for their sign: written differently, so never one shared relevance.
    rels = [_relevance(0.0), _relevance(-0.0), _relevance(0.5, ()), _relevance(0.5), _relevance(0.0)]
    duplicates = {docs[3].path: dup}
    listing = SourceListing(duplicates, AXIS, "zh")
    for i in (4, 2, 0, 3, 1):  # rows come in any order, each with its place
        listing.add(SourceRow(i, docs[i], 10, {}), {}, rels[i])

    listed = _accounts(listing)

    expected = [
        source_entry(
            d, AXIS, r, "duplicate" if d.path in duplicates else "no_increment", duplicates.get(d.path), "zh"
        )
        for d, r in zip(docs, rels, strict=True)
    ]
    assert [e.model_dump_json() for e in listed] == [e.model_dump_json() for e in expected]
    assert listed[2].event_time.utcoffset() == timedelta(hours=8)


def test_an_empty_window_lists_nothing() -> None:
    assert _accounts(SourceListing({}, AXIS, "zh")) == []


def test_a_listing_accounted_for_twice_is_an_error_not_an_empty_briefing() -> None:
    # Its columns are emptied once the entries are made: a second call would list no source at all.
    listing = SourceListing({}, AXIS, "zh")
    listing.add(SourceRow(0, _doc(0), 10, {}), {}, _relevance(0.5))
    assert len(_accounts(listing)) == 1
    with pytest.raises(ProcessorError, match="accounted for already"):
        _accounts(listing)


def test_the_listing_holds_a_small_fraction_of_what_its_entries_would() -> None:
    # A 100k window's listing held every source's entry through the briefing (~2.8 KB of objects each in the
    # worker; ~870 bytes here, where the summaries own the strings): the worker's peak with the 100k briefing.
    # Its columns hold ~300 bytes a source.
    n = 20_000
    rows = [SourceRow(i, _doc(i, title=f"a note about kv caches, number {i}"), 10, {}) for i in range(n)]
    rels = [_relevance(i / n) for i in range(n)]
    gc.collect()
    tracemalloc.start()
    try:
        listing = SourceListing({}, AXIS, "zh")
        for row, rel in zip(rows, rels, strict=True):
            listing.add(row, {}, rel)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / n < 400, f"{held / n:.0f} bytes a source"
    assert len(_accounts(listing)) == n


def test_entries_of_sources_with_the_same_title_hold_it_once() -> None:
    # A 100k window's sources have ~400 titles and ~40k topic lines: held once each, ~28 MiB less at the
    # worker's peak with the 100k briefing (its packing, while every entry is held).
    n = 20_000
    title = "a note about kv caches and their eviction under long contexts, as measured " * 2
    listing = SourceListing({}, AXIS, "zh")
    for i in range(n):
        listing.add(SourceRow(i, _doc(i, title=f"{title}{i % 10}"), 10, {}), {}, _relevance(0.5))
    gc.collect()
    tracemalloc.start()
    try:
        listed = _accounts(listing)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len({id(e.title) for e in listed}) == 10
    assert held / n < 900, f"{held / n:.0f} bytes a source"
