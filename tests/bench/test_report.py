"""docs/performance.md shows the figures of bench/results.json: its table is generated, and kept so."""

from __future__ import annotations

import json

import pytest

from bench import report


def test_the_performance_page_shows_the_committed_results() -> None:
    results = json.loads(report.RESULTS.read_text(encoding="utf-8"))
    page = report.PAGE.read_text(encoding="utf-8")
    assert report.render(results) in page, (
        "run `python -m bench.report` (make bench does) and commit the page"
    )


def test_every_target_and_run_of_the_results_is_on_the_page() -> None:
    results = json.loads(report.RESULTS.read_text(encoding="utf-8"))
    part = report.render(results)
    assert all(f"| {name} |" in part for name in results["verdicts"])
    assert all(f"N = {int(n):,}".replace(",", " ") in part for n in results["runs"])


def test_a_page_without_its_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no generated figures part"):
        report.rewritten("# Performance\n", {})
