"""A briefing pauses Python's cyclic collector (a fifth of a 10k briefing) and always turns it back on."""

from __future__ import annotations

import gc

import pytest

from streams.pipeline import _collector_paused


def test_the_collector_is_off_during_a_briefing_and_back_on_after_it_even_when_it_fails() -> None:
    assert gc.isenabled()
    with _collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), _collector_paused():
        raise RuntimeError("the briefing failed")
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with _collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
