"""Fixtures of the sinks tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sinks import state as state_module


@pytest.fixture
def merging() -> Iterator[None]:
    """Checkpoints with DuckDB's vacuum on, as before the state turned it off: its merges of row groups rewrite
    up to 2 048 rows of the notes' text at once, the sure way past the limit (and to a reopen). Without them a
    checkpoint writes only its own batch (a backlog's batch of very large notes can still be past it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_module, "STATE", replace(state_module.STATE, settings=()))
        yield
