"""Metric labels from paths and briefings: a writer per inbox folder, duplicates split exact/near."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from processors.labels import duplicate_kinds, writer_label
from processors.models import Document, Relevance, SourceEntry, SourceStatus

SH = ZoneInfo("Asia/Shanghai")
T = datetime(2026, 9, 27, 12, 0, tzinfo=SH)


def test_the_writer_is_the_inbox_folder_and_nothing_else_becomes_a_series() -> None:
    assert writer_label("inbox/jay/2026-09-27-1000-a.md") == "jay"
    assert writer_label("inbox/Tom/sub/x.md") == "tom"
    assert writer_label("paper_cards/1417-2609-19969.md") == "none"
    assert writer_label("inbox/stray.md") == "none"
    # A path-like or hostile folder name must not become its own series.
    assert writer_label("inbox/" + "x" * 200 + "/a.md") == "other"
    assert writer_label("inbox/../a.md") == "other"
    assert writer_label("inbox/名字/a.md") == "other"


def _doc(path: str, text_hash: str) -> Document:
    return Document(
        path=path, sha256=path, writer="jay", kind="inbox", event_time=T, bytes=1, title="t", text="t",
        text_hash=text_hash,
    )  # fmt: skip


def _src(path: str, status: SourceStatus, dup: str | None = None) -> SourceEntry:
    return SourceEntry(
        path=path, writer="jay", kind="inbox", event_time=T, bytes=1, title="t",
        relevance=Relevance(label="高", stars=4, score=1.0), status=status, duplicate_of=dup,
    )  # fmt: skip


def test_duplicates_with_the_same_text_are_exact_and_the_others_near() -> None:
    docs = [_doc("a", "h1"), _doc("b", "h1"), _doc("c", "h2"), _doc("d", "h3")]
    sources = [_src("a", "used"), _src("b", "duplicate", "a"), _src("c", "duplicate", "a"), _src("d", "used")]
    assert duplicate_kinds(sources, docs) == {"exact": 1, "near": 1}
    assert duplicate_kinds([_src("a", "used")], docs) == {}
