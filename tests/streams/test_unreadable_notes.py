"""A stored note whose body frame is well headed but does not read back (the worker checks only the header) is
stored, then reported by every reader: a warning naming it, a metric, the briefing's rejected list, the browser."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from processors.wire_frames import pack_body
from streams.assembly import Assembly
from streams.browser import Browser
from streams.control import new_command
from streams.explain import _said
from tests.clocks import ManualClock
from tests.streams.agent_support import END, TEXT, Start, owning_worker, parsed, raw_value, settled

GOOD = "inbox/jay/2026-09-27-1000-kv.md"
DAMAGED = "inbox/jay/2026-09-27-1100-kv.md"
OTHER = "# 推理 speculative decoding\nvLLM inference TTFT -30% with a draft model, arXiv:2609.23131\n"
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
            axis, new_command(axis.name, "flush", END, clock.now())
        )
    [listed] = briefing.rejected
    assert (listed.path, listed.reason_code) == (DAMAGED, "damaged") and "not UTF-8" in listed.reason
    assert {s.path for s in briefing.sources} == {GOOD, DAMAGED}  # the rest of the briefing goes on
    [line] = [r.getMessage() for r in caplog.records if r.name == "sinks.unreadable"]
    assert DAMAGED in line and f"axis {axis.name}" in line
    assert worker.metric("predigest_stored_notes_unreadable_total", reader="briefing") == 1
    source = next(s for s in briefing.sources if s.path == DAMAGED)
    assert "not UTF-8" in _said(briefing, source)["unreadable"]  # what `predigest explain` prints

    browser = Browser(worker.settings, worker.services.pipeline, clock)
    page = await browser.note(DAMAGED)
    assert page.status == 200 and DAMAGED in page.html and "cannot be read" in page.html
    assert "not UTF-8" in page.html
    assert worker.metric("predigest_stored_notes_unreadable_total", reader="browse") == 1
    assert "cannot be read" not in (await browser.note(GOOD)).html
