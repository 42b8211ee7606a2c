"""Fixtures of the sinks tests."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import duckdb
import pytest

from sinks import duck_close
from sinks import state as state_module


@pytest.fixture
def merging() -> Iterator[None]:
    """Checkpoints with DuckDB's vacuum on, as before the state turned it off: its merges of row groups rewrite
    up to 2 048 rows of the notes' text at once, the sure way past the limit (and to a reopen). Without them a
    checkpoint writes only its own batch (a backlog's batch of very large notes can still be past it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_module, "STATE", replace(state_module.STATE, settings=()))
        yield


@dataclass
class HeldClose:
    """DuckDB's closes held back until the closer says it has been closing for over 1 s (or the test sets `said`: a
    close on the event loop gives up before that line); `then` runs at that line, before they go on."""

    said: threading.Event = field(default_factory=threading.Event)
    then: Callable[[], object] = lambda: None


class _Said(logging.Handler):
    def __init__(self, held: HeldClose) -> None:
        super().__init__()
        self._held = held

    def emit(self, record: logging.LogRecord) -> None:
        if "has been closing for over 1 s" in record.getMessage() and not self._held.said.is_set():
            self._held.then()
            self._held.said.set()


@pytest.fixture
def held_close() -> Iterator[HeldClose]:
    """A close slower than any budget of interrupts, with no read on it, as DuckDB's checkpoint of a large WAL is on
    a loaded machine (0.2 s of interrupts ran out at load 6-13): held by an event, not a duration."""
    held, real = HeldClose(), duck_close._close
    handler, logger = _Said(held), logging.getLogger(duck_close.__name__)

    def close(connection: duckdb.DuckDBPyConnection, *rest: object) -> None:
        held.said.wait(60)  # the closer's line, or the test's end
        real(connection, *rest)  # type: ignore[arg-type]

    logger.addHandler(handler)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(duck_close, "_close", close)
            yield held
    finally:
        held.said.set()
        logger.removeHandler(handler)
