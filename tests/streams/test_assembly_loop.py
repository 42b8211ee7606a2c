"""What a briefing's thread has the event loop do (DuckDB's sheds, its notes read whole) ends even when the
loop stops first: a worker stopping mid-briefing must not be left waiting on its executor's thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from streams import assembly
from streams.assembly import on_loop


@pytest.mark.timeout(20)
def test_a_call_runs_on_the_running_loop_and_in_the_caller_once_the_loop_has_stopped_or_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(assembly, "LOOP_CHECK_SECONDS", 0.05)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        assert on_loop(loop, threading.get_ident) == runner.ident
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
    assert on_loop(loop, threading.get_ident) == threading.get_ident()  # stopped
    loop.close()
    assert on_loop(loop, threading.get_ident) == threading.get_ident()  # closed
