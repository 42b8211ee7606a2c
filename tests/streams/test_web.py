"""The body of `GET /briefings/{axis}/latest`, read in a thread on a cursor of its own (streams.web)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from processors.models import Briefing
from sinks.state import StateStore
from streams.web import _latest_body
from tests.state_support import SH, empty_briefing

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


async def test_the_latest_briefing_is_answered_as_recorded_from_a_thread(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    try:
        assert await asyncio.to_thread(_latest_body, state.reader(), "inference") is None  # the view's 404
        recorded = empty_briefing(END)
        state.record_emission(recorded, "base", "# md\n", emitted_at=END)
        body = await asyncio.to_thread(_latest_body, state.reader(), "inference")
        # What the endpoint answered when it read on the event loop: the briefing dumped by alias.
        assert body == recorded.model_dump(mode="json", by_alias=True)
        assert Briefing.model_validate(body) == recorded
    finally:
        state.close()
