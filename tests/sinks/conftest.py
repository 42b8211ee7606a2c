"""Fixtures of the sinks tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sinks import duck
from sinks import state as state_module


@pytest.fixture
def merging() -> Iterator[None]:
    """Checkpoints with DuckDB's vacuum on, as before the state turned it off: its merges of row groups rewrite
    up to 2 048 rows of the notes' text at once, the sure way past the limit (and to a reopen). Without them a
    checkpoint writes only its own batch (a backlog's batch of very large notes can still be past it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_module, "STATE", replace(state_module.STATE, settings=()))
        yield


@pytest.fixture
def unhurried_close() -> Iterator[None]:
    """A reopen's close waited for up to ~10 s, not 0.2 s, where no read holds the state: only the close's own work
    (60-160 ms at load 4-6) holds it then, which a box at load 6 stretched past 0.2 s, and the write failed for a
    read that did not exist (a StateBusyError, which said then that a read still ran on it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(duck, "CLOSE_ATTEMPTS", 1000)
        yield
