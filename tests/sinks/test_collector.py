"""The cyclic collector paused around a state batch is on again after it, failed or not, and after overlaps."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from sinks import collector
from sinks.state import StateStore
from tests.state_support import parsed, put_document


def test_a_batch_leaves_the_collector_on_whether_it_commits_or_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    try:
        assert put_document(state, "inference", parsed("inbox/jay/a.md", "# a\nfirst"), raw_offset=1)
        assert gc.isenabled()

        def fails(records: object) -> object:
            assert not gc.isenabled(), "paused while the batch is written"
            raise OSError("disk full")

        monkeypatch.setattr(state.docs, "write", fails)
        with pytest.raises(OSError):
            put_document(state, "inference", parsed("inbox/jay/a.md", "# a\nsecond"), raw_offset=2)
        assert gc.isenabled()  # a worker whose collector stayed off would keep every cycle it makes
    finally:
        state.close()


def test_overlapping_pauses_keep_it_off_until_the_last_one_ends() -> None:
    store = collector.paused()
    brief = collector.paused()
    store.__enter__()  # a batch's transaction in the window agent's thread
    brief.__enter__()  # a briefing begins on the event loop meanwhile
    store.__exit__(None, None, None)  # the batch commits; the briefing goes on for seconds
    try:
        assert not gc.isenabled(), "the briefing's pause was ended by the store's"
    finally:
        brief.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_turned_off_elsewhere_stays_off() -> None:
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
