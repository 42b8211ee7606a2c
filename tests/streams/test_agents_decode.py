"""The window agent's decode of a batch: no cyclic collection while its rows are made, the collector on after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from processors.wire import Notes
from processors.wire_frames import pack_notes
from streams import agents
from streams.agents import _decode_all
from tests.processors.test_wire_v5 import batch


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The collections started while the test runs, the collector set off every 50 allocations."""
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*threshold)


def test_a_batch_is_decoded_without_a_collection_and_the_collector_is_on_after(
    collections: list[int],
) -> None:
    # Every row lives until the store: a collection meanwhile frees nothing and traverses the worker's heap.
    values = [v for _, v in pack_notes(batch({}), {}, 16 * 1024)] + [b"not a documents record"]
    assert len(values) > 3
    collections.clear()  # those set off while the records were made
    decoded = _decode_all(values)
    assert len(collections) <= 1  # the one the first allocation after the pause sets off; several without it
    assert all(isinstance(d, Notes) and d.rows for d in decoded[:-1]) and isinstance(decoded[-1], ValueError)
    assert gc.isenabled()


class PanicException(BaseException):
    """As PyO3 raises a Rust panic: not an Exception."""


def test_a_record_that_panics_the_decode_is_unreadable_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    # Raised out of the decode it would stop the worker, and the record would stop it again at every restart.
    def panic(value: bytes) -> Notes:
        raise PanicException("index out of bounds")

    monkeypatch.setattr(agents, "decode_notes", panic)
    [decoded] = _decode_all([b"a hostile record"])
    assert isinstance(decoded, ValueError) and str(decoded) == "PanicException: index out of bounds"


def test_an_unreadable_record_s_reason_holds_no_cycle_with_the_batch() -> None:
    # Its traceback held the decode's frame, whose `out` held it: the whole batch (raw values, every row) was
    # freed only by a collection, rare while batches flow (sinks.collector.FLOWING_YOUNG), not as its store ended.
    values = [v for _, v in pack_notes(batch({}), {}, 16 * 1024)] + [b"not a documents record"]
    gc.collect()
    gc.disable()
    try:
        decoded = _decode_all(values)
        assert isinstance(decoded[-1], ValueError) and str(decoded[-1])
        del decoded
        assert gc.collect() == 0, "the decoded batch was in a reference cycle"
    finally:
        gc.enable()


def test_a_panic_s_reason_holds_no_cycle_with_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its cause's traceback held `unpanicked`'s frame, whose caller is the decode's frame (f_back), whose `out`
    # held the reason: the same cycle one frame further.
    def panic(value: bytes) -> Notes:
        raise PanicException("index out of bounds")

    monkeypatch.setattr(agents, "decode_notes", panic)
    gc.collect()
    gc.disable()
    try:
        decoded = _decode_all([b"a hostile record", b"another"])
        assert [str(d) for d in decoded] == ["PanicException: index out of bounds"] * 2
        del decoded
        assert gc.collect() == 0, "the decoded batch was in a reference cycle"
    finally:
        gc.enable()
