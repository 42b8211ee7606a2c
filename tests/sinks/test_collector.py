"""The cyclic collector paused around a state batch is on again after it, failed or not, and after overlaps."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
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


def _prints(code: str) -> object:
    """What a fresh process prints (JSON) after `code`, set as the worker is while ingesting."""
    setup = (
        "import gc, json, weakref\nfrom sinks import collector\ncollector.for_ingest()\nclass Node: pass\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", setup + textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


def test_a_briefings_cycles_are_freed_when_it_ends() -> None:
    code = """
    with collector.briefing(collect_first=False):
        node = Node(); node.me = node; freed = weakref.ref(node); del node
        during = freed() is None
    print(json.dumps([during, freed() is None, gc.isenabled()]))
    """
    assert _prints(code) == [False, True, True]


def test_a_large_briefing_starts_with_the_ingests_cycles_freed() -> None:
    code = """
    node = Node(); node.me = node; freed = weakref.ref(node); del node  # left young by the ingest's threshold
    with collector.briefing(collect_first=True):
        print(json.dumps(freed() is None))
    """
    assert _prints(code) is True
