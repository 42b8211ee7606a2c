"""Metric labels from paths: a writer per inbox folder, never a path."""

from __future__ import annotations

from processors.metric_labels import writer_label


def test_the_writer_is_the_inbox_folder_and_nothing_else_becomes_a_series() -> None:
    assert writer_label("inbox/jay/2026-09-27-1000-a.md") == "jay"
    assert writer_label("inbox/Tom/sub/x.md") == "tom"
    assert writer_label("paper_cards/1417-2609-19969.md") == "none"
    assert writer_label("inbox/stray.md") == "none"
    # A path-like or hostile folder name must not become its own series.
    assert writer_label("inbox/" + "x" * 200 + "/a.md") == "other"
    assert writer_label("inbox/../a.md") == "other"
    assert writer_label("inbox/名字/a.md") == "other"
