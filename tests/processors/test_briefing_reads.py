"""A briefing's reads leave its store room to drop what it cached, between them and during a long scan."""

from __future__ import annotations

import pytest

from tests.processors.notes import brief, example_documents


def test_a_long_scan_lets_the_store_shed_its_cache_as_it_goes_and_the_briefing_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # At 100k sources the scan's listing grows to ~200 MiB while DuckDB caches the rows it read (~50 MiB more).
    docs = example_documents()
    plain = brief(docs)
    monkeypatch.setattr("processors.briefing.SHED_ROWS", 2)
    calls: list[int] = []
    shed = brief(docs, between_reads=lambda: calls.append(1))
    assert shed == plain
    assert len(calls) == 2 + len(plain.sources) // 2  # before and after the scan, and every 2 rows of it
