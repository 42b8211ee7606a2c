"""A briefing reads its window as rows: whatever order they come in (a state streams them as stored), it is the
same briefing as the one of the documents held in memory."""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator
from dataclasses import replace

import pytest

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingHistory, BriefingRequest
from processors.models import Briefing, DocumentSummary
from processors.window_rows import SourceRow
from processors.window_set import MemoryWindow
from tests.processors.notes import AXES, END, INFERENCE, SH, WINDOW, example_documents, living, note

KV = "# vLLM 推理\n\n## KV cache\narXiv:2609.23130 vLLM KV cache 推理：吞吐量提升 3.8×，Cache hit 92.2%。\n"


class Shuffled(MemoryWindow):
    """The same window, its rows in another order every time they are read."""

    def __init__(self, *args: object, seed: int) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self._rng = random.Random(seed)

    def rows(self, profile: Collection[str]) -> Iterator[SourceRow]:
        rows = list(super().rows(profile))
        self._rng.shuffle(rows)
        return iter(rows)


def _window() -> tuple[list[DocumentSummary], list[DocumentSummary]]:
    docs = example_documents()
    first = note("inbox/jay/2026-09-27-1000-a.md", KV)
    again = note("inbox/tom/2026-09-27-1100-b.md", KV)  # an exact duplicate
    older = note("inbox/jay/2026-09-27-1000-a.md", KV.replace("3.8×", "2.1×"))  # superseded by `first`
    summaries = [d.summary() for d in [*docs, first, again]]
    return summaries, [older.summary()]


def _request(docs: list[DocumentSummary], superseded: list[DocumentSummary]) -> BriefingRequest:
    whole = {d.path: d for d in [*example_documents(), note("inbox/jay/2026-09-27-1000-a.md", KV)]}
    whole["inbox/tom/2026-09-27-1100-b.md"] = note("inbox/tom/2026-09-27-1100-b.md", KV)
    return BriefingRequest(
        axis=INFERENCE,
        axes=AXES,
        trigger="close",
        window=WINDOW,
        generated_at=END,
        zone=SH,
        documents=docs,
        superseded=superseded,
        living=living(),
        history=BriefingHistory(frozenset(), 197),
        load=lambda paths: [whole[p] for p in paths if p in whole],
    )


@pytest.fixture(scope="module")
def in_memory() -> Briefing:
    return assemble_briefing(_request(*_window()))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_in_any_order_give_the_same_briefing(in_memory: Briefing, seed: int) -> None:
    docs, superseded = _window()
    source = Shuffled(docs, superseded, (INFERENCE.name, WINDOW), AXES, seed=seed)
    shuffled = assemble_briefing(replace(_request(docs, superseded), source=source))
    assert shuffled == in_memory
    assert {s.status for s in shuffled.sources} >= {"used", "duplicate", "superseded", "no_increment"}


def test_a_superseded_version_is_listed_with_its_note_s_relevance(in_memory: Briefing) -> None:
    by_status = {(s.path, s.status): s for s in in_memory.sources}
    current = by_status[("inbox/jay/2026-09-27-1000-a.md", "used")]
    older = by_status[("inbox/jay/2026-09-27-1000-a.md", "superseded")]
    assert older.relevance == current.relevance
