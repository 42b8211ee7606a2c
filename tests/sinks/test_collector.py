"""The cyclic collector paused around a state batch is on again after it, failed or not, and after overlaps."""

from __future__ import annotations

import gc
import weakref
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


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_while_a_batch_is_in_hand_young_collections_are_rarer_and_after_the_last_its_cycles_are_freed() -> (
    None
):
    before = gc.get_threshold()
    collector.flow_began()  # the decode takes a batch
    collector.flow_began()  # the store task of the one before is still running
    try:
        assert gc.get_threshold()[0] == collector.FLOWING_YOUNG
        alive = weakref.ref(_Cycle())
        collector.flow_ended()  # the store before ends: the decoded batch is still in hand
        assert gc.get_threshold()[0] == collector.FLOWING_YOUNG
        assert alive() is not None  # not a collection per batch end
    finally:
        collector.flow_ended()
    assert gc.get_threshold() == before  # what a briefing and an idle worker run with
    assert alive() is None, "a cycle made while batches flowed outlived the flow"


def test_a_flow_that_ends_inside_a_pause_leaves_its_collection_to_the_pause_s_end() -> None:
    before = gc.get_threshold()
    with collector.paused():  # a briefing, on the event loop, while the last batch is stored
        collector.flow_began()
        alive = weakref.ref(_Cycle())
        collector.flow_ended()
        assert gc.get_threshold() == before
        assert alive() is not None, "the briefing's young objects were traversed in its middle"
    gc.collect(0)  # what the first allocation past the restored threshold sets off
    assert alive() is None


def test_thresholds_set_by_someone_else_while_batches_flow_are_theirs_after_the_flow() -> None:
    before = gc.get_threshold()
    collector.flow_began()
    try:
        gc.set_threshold(0)  # collection turned off meanwhile (an operator's hook, a profiler)
    finally:
        collector.flow_ended()
    try:
        assert gc.get_threshold()[0] == 0, "the flow switched collection back on"
    finally:
        gc.set_threshold(*before)
