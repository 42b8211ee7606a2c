"""`GET /status` whose state read panics in the compiled extension: a 500 that says so in one line, a log line,
and the next request answered as before (PyO3's PanicException is a BaseException, which aiohttp does not answer)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NoReturn

import pytest
from aiohttp.test_utils import TestClient, TestServer

from streams.app import WorkerApp, create_app
from tests.clocks import ManualClock
from tests.streams.agent_support import in_process_settings


class PanicException(BaseException):
    """As PyO3 raises a Rust panic: not an Exception."""


def _panic(*args: object, **kwargs: object) -> NoReturn:
    raise PanicException("index out of bounds: the len is 3 but the index is 7\nsecond line")


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[WorkerApp]:
    """The worker's app on in-process settings (no broker: the lag reads as down), served without Faust's start;
    its stop's last step closes the state the requests opened."""
    built = create_app(in_process_settings(tmp_path), ManualClock())
    yield built
    assert built.closing is not None
    await built.closing()


async def test_a_panicking_status_read_is_a_500_and_the_next_request_is_answered(
    app: WorkerApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with TestClient(TestServer(app.web.web_app)) as http:  # type: ignore[attr-defined]  # aiohttp driver
        with monkeypatch.context() as patch:
            patch.setattr("streams.status._read_axes", _panic)
            with caplog.at_level(logging.ERROR, logger="streams.web_failures"):
                failed = await http.get("/status")
            assert failed.status == 500
            body = await failed.json()
            assert body == {
                "error": "the state could not be read: PanicException: index out of bounds: the len is 3 "
                "but the index is 7"
            }
            lines = [r for r in caplog.records if r.name == "streams.web_failures"]
            assert len(lines) == 1 and lines[0].getMessage().startswith("GET /status failed: PanicException")
        answered = await http.get("/status")
        assert answered.status == 200, await answered.text()
        assert "axes" in await answered.json()
