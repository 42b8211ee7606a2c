"""A stored note whose body frame is well headed but does not read back (the worker checks only the header) is
stored, then reported by every reader: a warning naming it, a metric, the briefing's rejected list, the browser."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from processors.briefing import MIN_RESERVE
from processors.briefing_names import briefing_basename
from processors.briefing_rules import BriefingRules, IncrementRules
from processors.i18n import Lang
from processors.models import Briefing, Trigger
from processors.render_markdown import render_markdown
from processors.wire_frames import pack_body
from sinks.files import BriefingFiles
from streams.assembly import Assembly
from streams.browser import Browser
from streams.control import new_command
from streams.explain import explain_axis
from tests.clocks import ManualClock
from tests.streams.agent_support import (
    END,
    SH,
    TEXT,
    InProcessWorker,
    Start,
    owning_worker,
    parsed,
    raw_value,
    settled,
)

GOOD = "inbox/jay/2026-09-27-1000-kv.md"
DAMAGED = "inbox/jay/2026-09-27-1100-kv.md"
COPY = "inbox/tom/2026-09-27-1100-kv.md"  # GOOD's text again, later
LATER = "inbox/spark/2026-09-27-1200-kv.md"
OTHER = "# 推理 speculative decoding\nvLLM inference TTFT -30% with a draft model, arXiv:2609.23131\n"
QUEUE = "work-queue/2026-09-27-1200.md"
# Per language: the damaged note's line in 五, the summary line's and the footer's counts (each note once).
LISTED: dict[Lang, tuple[str, str, str]] = {
    "en": (
        "stored, but its text is damaged and cannot be read",
        "Sources: 1 (1 used, 0 duplicate, 0 superseded, 2 rejected)",
        "sources 1 (0 duplicate, 2 rejected)",
    ),
    "zh": (
        "已存储，但正文已损坏、无法读取",
        "来源：1 个（已用 1，重复 0，已取代 0，拒收 2）",
        "来源 1 个（重复 0，拒收 2）",
    ),
}
QUEUE_TEXT = "1. inference: try the draft model of arXiv:2609.23131 on vLLM\n"
# Declares its size and unpacks to it, but holds an encoded surrogate: json.loads alone would let it through.
NOT_UTF8 = pack_body(b'{"text":"vLLM \xed\xa0\x80","sections":[]}')


def _with_body(value: bytes, frame: bytes) -> bytes:
    """A v7 record of one note with its body frame replaced (its lengths line says so)."""
    magic, sizes, lengths, rest = value.split(b"\n", 3)
    [size] = json.loads(lengths)
    return b"\n".join([magic, sizes, b"[%d]" % len(frame), rest[: len(rest) - size] + frame])


async def test_a_damaged_body_is_stored_then_named_counted_and_listed_by_its_readers(
    tmp_path: Path, stops: list[int], start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path, start, clock)
    [(key, good)] = await parsed(worker, raw_value(GOOD, TEXT))
    [(bad_key, bad)] = await parsed(worker, raw_value(DAMAGED, OTHER))
    state = worker.services.pipeline().state
    axis = worker.settings.axes[0]
    async with worker.agents.window.test_context() as agent:
        await agent.put(good, key=key, partition=0)
        await agent.put(_with_body(bad, NOT_UTF8), key=bad_key, partition=0)
        stored = lambda: state.document_count(axis.name) == 2 or bool(worker.outputs.dead_letters)  # noqa: E731
        await settled(stored, "both notes stored")
    assert worker.outputs.dead_letters == [] and stops == []  # not refused at ingest: its header is whole

    with caplog.at_level(logging.WARNING, logger="sinks.unreadable"):
        briefing, _ = await Assembly(worker.settings, state, clock).briefing(
            axis, new_command(axis.name, "flush", END, clock.now()), threading.Event()
        )
    [listed] = briefing.rejected
    assert (listed.path, listed.reason_code) == (DAMAGED, "damaged") and "not UTF-8" in listed.reason
    assert [s.path for s in briefing.sources] == [GOOD]  # the rest of the briefing goes on
    [line] = [r.getMessage() for r in caplog.records if r.name == "sinks.unreadable"]
    assert DAMAGED in line and f"axis {axis.name}" in line
    assert worker.metric("predigest_stored_notes_unreadable_total", reader="briefing") == 1
    assert DAMAGED not in {n.path for n in briefing.no_increment_sources}
    name = briefing_basename(axis.name, END, "flush", SH)
    BriefingFiles(worker.settings.out_dir).ensure(
        axis.name, name, briefing.model_dump_json(by_alias=True), "#\n"
    )
    said = explain_axis(worker.settings, axis, DAMAGED).said  # what `predigest explain` prints
    assert said["rejected"]["code"] == "damaged" and "not UTF-8" in said["rejected"]["reason"]

    browser = Browser(worker.settings, worker.services.pipeline, clock)
    page = await browser.note(DAMAGED)
    assert page.status == 200 and DAMAGED in page.html and "cannot be read" in page.html
    assert "not UTF-8" in page.html
    assert worker.metric("predigest_stored_notes_unreadable_total", reader="browse") == 1
    assert "cannot be read" not in (await browser.note(GOOD)).html


async def _stored(worker: InProcessWorker, notes: list[tuple[str, str, bool]]) -> None:
    """Store the notes (path, text, damaged) through the window agent, a damaged one's body frame not UTF-8."""
    records = [r for path, text, _ in notes for r in await parsed(worker, raw_value(path, text))]
    state = worker.services.pipeline().state
    async with worker.agents.window.test_context() as agent:
        for (key, value), (_, _, damaged) in zip(records, notes, strict=True):
            await agent.put(_with_body(value, NOT_UTF8) if damaged else value, key=key, partition=0)
        await settled(lambda: state.document_count("inference") == len(notes), "the notes stored")


async def _briefing(worker: InProcessWorker, clock: ManualClock, trigger: Trigger = "flush") -> Briefing:
    axis = worker.settings.axes[0]
    state = worker.services.pipeline().state
    briefing, _ = await Assembly(worker.settings, state, clock).briefing(
        axis, new_command(axis.name, trigger, END, clock.now()), threading.Event()
    )
    return briefing


async def test_a_damaged_contributor_and_source_are_listed_once_as_damaged(
    tmp_path: Path, start: Start
) -> None:
    # A contributor whose text does not read back, and a work queue (read whole for its counts): each is listed
    # among the rejected, as damaged, and nowhere else; not a source, not a no-increment reason; counted once.
    clock = ManualClock(END + timedelta(minutes=10))
    notes = [(GOOD, TEXT), (DAMAGED, OTHER), (QUEUE, QUEUE_TEXT)]
    damaged = await _briefing_of(tmp_path / "damaged", start, clock, [(p, t, p != GOOD) for p, t in notes])
    readable = await _briefing_of(tmp_path / "readable", start, clock, [(p, t, False) for p, t in notes])
    assert [(r.path, r.reason_code) for r in damaged.rejected] == [(DAMAGED, "damaged"), (QUEUE, "damaged")]
    assert [s.path for s in damaged.sources] == [GOOD]
    assert not {DAMAGED, QUEUE} & {n.path for n in damaged.no_increment_sources}
    # The id only they cite is not listed in 四: no listed source would say where it came from.
    assert "2609.23131" in {e.id for e in readable.arxiv} - {e.id for e in damaged.arxiv}
    # The good note's entry is the one it has when they read back: their stored terms stay weighed.
    assert damaged.sources == [s for s in readable.sources if s.path == GOOD]

    said = json.loads(damaged.model_dump_json(by_alias=True))
    listed = [s["path"] for s in said["sources"]] + [r["path"] for r in said["rejected"]]
    assert sorted(listed) == sorted([GOOD, DAMAGED, QUEUE])  # each note once
    for lang in LISTED:
        markdown = render_markdown(damaged, lang=lang, zone=SH)
        text, *counts = LISTED[lang]
        for path in (DAMAGED, QUEUE):
            [line] = [x for x in markdown.splitlines() if path in x]  # 五's rejected, and nowhere else
            assert text in line, line
        assert all(c in markdown for c in counts), markdown  # the summary line and the footer


async def _briefing_of(
    folder: Path,
    start: Start,
    clock: ManualClock,
    notes: list[tuple[str, str, bool]],
    trigger: Trigger = "flush",
) -> Briefing:
    worker = owning_worker(folder, start, clock)
    await _stored(worker, notes)
    return await _briefing(worker, clock, trigger)


@pytest.mark.parametrize("trigger", ["flush", "close"])
async def test_the_readable_copy_of_a_damaged_original_takes_its_place(
    tmp_path: Path, start: Start, trigger: Trigger
) -> None:
    # The damage shows only when the original is read whole, its duplicate group settled: its copy is briefed as
    # it would be alone (used, its increment), the original listed once, among the rejected.
    clock = ManualClock(END + timedelta(minutes=10))
    notes = [(GOOD, TEXT, True), (COPY, TEXT, False), (LATER, TEXT, False)]
    damaged = await _briefing_of(tmp_path / "damaged", start, clock, notes, trigger)
    alone = await _briefing_of(
        tmp_path / "alone", start, clock, [(COPY, TEXT, False), (LATER, TEXT, False)], trigger
    )
    assert [(r.path, r.reason_code) for r in damaged.rejected] == [(GOOD, "damaged")]
    listed = [(s.path, s.status, s.duplicate_of) for s in damaged.sources]
    assert listed == [(COPY, "used", None), (LATER, "duplicate", COPY)]
    assert (damaged.sources, damaged.increments, damaged.arxiv) == (
        alone.sources,
        alone.increments,
        alone.arxiv,
    )
    assert len(damaged.increments) == 1
    assert "sources 2 (1 duplicate, 1 rejected)" in render_markdown(damaged, lang="en", zone=SH)


LIVING = "living/inference.md"  # the default inference axis's living document
LIVING_TEXT = "# inference.md v3.44\n\n## §3 推理\n### §3.3 Cache Compression\nKV cache 压缩 vLLM serving\n"


async def test_a_damaged_living_document_is_said_damaged_where_its_sections_would_be(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # Stored, but not read back: not "never reached the worker"; the briefing says why its sections are TBD.
    clock = ManualClock(END + timedelta(minutes=10))
    with caplog.at_level(logging.WARNING, logger="streams.assembly"):
        b = await _briefing_of(tmp_path, start, clock, [(GOOD, TEXT, False), (LIVING, LIVING_TEXT, True)])
    assert [(r.path, r.reason_code) for r in b.rejected] == [(LIVING, "damaged")]
    assert [i.unplaced_reason for i in b.increments] == ["living_document_damaged"]
    [line] = [r.getMessage() for r in caplog.records if r.name == "streams.assembly"]
    assert "text is damaged" in line and "edit it" in line and "never reached" not in line
    markdown = render_markdown(b, lang="en", zone=SH)
    assert "living document inference.md (damaged, cannot be read)" in markdown
    assert "TBD (the living document is stored, but its text is damaged and cannot be read)" in markdown
    assert "has no related section yet" not in markdown
    zh = render_markdown(b, lang="zh", zone=SH)  # as docs/briefing.md quotes it
    assert "活文档 inference.md（已损坏、无法读取）" in zh
    assert "待定（活文档已存储，但正文已损坏、无法读取）" in zh


async def test_a_damaged_note_s_stored_terms_stay_weighed_in_the_other_sources_relevance(
    tmp_path: Path, start: Start
) -> None:
    # Its stored terms (read at ingest, whole) count in the window's statistics as when it reads back: leaving
    # them out would take a second scan of the window (~+45 % of a 100k briefing), and a source's relevance moves
    # with them only as it does with any other note of the window.
    clock = ManualClock(END + timedelta(minutes=10))
    long = "# vLLM serving\n" + "KV cache serving throughput vLLM inference arXiv:2609.23131 " * 40 + "\n"
    notes = [(LIVING, LIVING_TEXT, False), (GOOD, TEXT, False), (LATER, OTHER, False)]
    alone = await _briefing_of(tmp_path / "alone", start, clock, notes)
    readable = await _briefing_of(tmp_path / "readable", start, clock, [*notes, (DAMAGED, long, False)])
    damaged = await _briefing_of(tmp_path / "damaged", start, clock, [*notes, (DAMAGED, long, True)])
    assert [r.path for r in damaged.rejected] == [DAMAGED]
    weighed = [(s.path, s.relevance) for s in damaged.sources]
    assert weighed == [(s.path, s.relevance) for s in readable.sources if s.path != DAMAGED]
    assert weighed != [(s.path, s.relevance) for s in alone.sources]  # the statistics do move with it


RICH = (
    "# vLLM inference KV cache serving\n"
    + "vLLM inference KV cache serving: throughput 3.8×, TTFT -46%, arXiv:2609.23131.\n" * 3
)


async def test_a_damaged_contributor_s_slot_goes_to_the_next_source(tmp_path: Path, start: Start) -> None:
    # One contributor kept (`max_contributors`): the damaged note, more relevant, would take the slot and leave
    # the briefing with no increment; the next source, held in reserve by the same read, takes it.
    clock = ManualClock(END + timedelta(minutes=10))
    briefings = []
    for name, slots, cut in (("readable", 2, False), ("damaged", 1, True)):
        rules = BriefingRules(increments=IncrementRules(max_contributors=slots))
        worker = owning_worker(tmp_path / name, start, clock, rules=rules)
        await _stored(worker, [(GOOD, TEXT, False), (DAMAGED, RICH, cut)])
        briefings.append(await _briefing(worker, clock))
    readable, damaged = briefings
    assert [r.path for r in damaged.rejected] == [DAMAGED]
    # Read whole once, not read again: counted once.
    assert worker.metric("predigest_stored_notes_unreadable_total", reader="briefing") == 1
    assert [(s.path, s.status) for s in damaged.sources] == [(GOOD, "used")] and len(damaged.increments) == 1
    assert damaged.sources == [s for s in readable.sources if s.path == GOOD]


async def test_more_damaged_contributors_than_the_reserve_holds_read_the_window_again_and_say_so(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # One slot and a reserve of MIN_RESERVE beside it, every note of them damaged: the window is read again
    # (once), the operator told so, and the slot still goes to the readable note.
    assert len(TOPICS) > 1 + MIN_RESERVE
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(
        tmp_path, start, clock, rules=BriefingRules(increments=IncrementRules(max_contributors=1))
    )
    many = [
        (
            f"inbox/tom/2026-09-27-{10 + i:02d}30-{t}.md",
            f"# vLLM inference KV cache serving {t}\n"
            + f"vLLM inference KV cache serving {t}: throughput {i + 2}.8×, {t} TTFT -4{i}%.\n" * 3,
            True,
        )
        for i, t in enumerate(TOPICS)
    ]
    await _stored(worker, [(GOOD, TEXT, False), *many])
    with caplog.at_level(logging.INFO, logger="streams.assembly"):
        b = await _briefing(worker, clock)
    assert sorted(r.path for r in b.rejected) == sorted(p for p, _, _ in many)
    assert [(s.path, s.status) for s in b.sources] == [(GOOD, "used")] and len(b.increments) == 1
    [line] = [r.getMessage() for r in caplog.records if "read again" in r.getMessage()]
    assert f"{len(many)} damaged notes freed more contributors' slots" in line and "read again, once" in line


TOPICS = ["prefill", "decode", "quantization", "batching", "paging", "sharding", "offload", "caching"]
TOPICS += ["routing", "speculation", "compilation", "kernels"]


ROW_MISSING: dict[Lang, str] = {
    "en": "a row of it is missing from the state (a `predigest rebuild` restores it",
    "zh": "状态库缺少它的一行记录（documents 主题仍保留其记录时，`predigest rebuild` 可恢复）",
}


async def test_a_living_document_missing_a_row_is_said_so_with_the_rebuild_that_restores_it(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    # The advice for a damaged body (a rebuild keeps the damaged copy) would be wrong: a rebuild restores the row.
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path, start, clock)
    await _stored(worker, [(GOOD, TEXT, False), (LIVING, LIVING_TEXT, False)])
    state = worker.services.pipeline().state
    with state.unchanged():
        state._db.execute("DELETE FROM contents WHERE path = ?", [LIVING])
    with caplog.at_level(logging.WARNING, logger="streams.assembly"):
        b = await _briefing(worker, clock)
    assert [(r.path, r.reason_code) for r in b.rejected] == [(LIVING, "row_missing")]
    [line] = [r.getMessage() for r in caplog.records if "without its living document" in r.getMessage()]
    assert "a row of it is missing from the state" in line and "`predigest rebuild` restores it" in line
    assert "keeps the damaged copy" not in line
    # Where its sections would be, the briefing says the same, not "damaged" (an edit's fix, not a rebuild's);
    # its JSON keeps a code the release before reads in every recorded briefing of the axis (`earlier_briefings`):
    # a new one failed each of that axis's briefings after a rollback. Its rejected entry tells the two apart.
    assert [i.unplaced_reason for i in b.increments] == ["living_document_damaged"]
    for lang, said in LIVING_ROW_MISSING.items():
        markdown = render_markdown(b, lang=lang, zone=SH)
        assert all(text in markdown for text in said), markdown
        assert "damaged" not in markdown and "已损坏" not in markdown, markdown


# The summary line's living document and 二's suggested sections, as docs/briefing.md quotes them.
LIVING_ROW_MISSING: dict[Lang, tuple[str, str]] = {
    "en": (
        "living document inference.md (a row of it is missing from the state)",
        "TBD (the living document is stored, but a row of it is missing from the state: a `predigest rebuild` "
        "restores it)",
    ),
    "zh": (
        "活文档 inference.md（状态库缺少它的一行记录）",
        "待定（活文档已存储，但状态库缺少它的一行记录：`predigest rebuild` 可恢复）",
    ),
}


@pytest.mark.parametrize("table", ["source_rows", "contents"])
async def test_a_note_whose_stored_row_is_missing_is_listed_damaged_not_left_out(
    tmp_path: Path, start: Start, table: str
) -> None:
    # The schema's invariant (each version's contents and source rows) broken by a bug or a hand edit: the note
    # was dropped from the briefing without a line; now listed once, as a row missing: not "damaged", whose copy
    # a rebuild keeps, since a rebuild writes both rows again. Without its source row nothing of it is read (as if
    # never stored); without its contents row, its facts count as a damaged body's do.
    clock = ManualClock(END + timedelta(minutes=10))
    worker = owning_worker(tmp_path / "missing", start, clock)
    await _stored(worker, [(GOOD, TEXT, False), (DAMAGED, OTHER, False)])
    state = worker.services.pipeline().state
    with state.unchanged():
        state._db.execute(f"DELETE FROM {table} WHERE path = ?", [DAMAGED])
    missing = await _briefing(worker, clock)
    others = [(GOOD, TEXT, False)] + ([] if table == "source_rows" else [(DAMAGED, OTHER, True)])
    alone = await _briefing_of(tmp_path / "alone", start, clock, others)
    [listed] = missing.rejected
    row = "source" if table == "source_rows" else "contents"
    assert (listed.path, listed.reason_code) == (DAMAGED, "row_missing")
    assert f"its {row} row is missing" in listed.reason
    assert (missing.sources, missing.increments, missing.arxiv, missing.no_increment_sources) == (
        alone.sources,
        alone.increments,
        alone.arxiv,
        alone.no_increment_sources,
    )
    for lang, said in ROW_MISSING.items():
        [line] = [x for x in render_markdown(missing, lang=lang, zone=SH).splitlines() if DAMAGED in x]
        assert said in line and LISTED[lang][0] not in line, line
    page = await Browser(worker.settings, worker.services.pipeline, clock).note(DAMAGED)
    assert page.status == 200 and f"its {row} row is missing" in page.html
