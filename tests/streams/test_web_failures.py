"""Every web view whose work panics or fails on a bug answers 500 in one line and the next request is answered as
before, on the worker's server (a middleware, streams.web.answer_failures) and the watcher's (streams.watcher_web);
an HTTP error a view raises on purpose, a cancellation and the token check are not changed by it."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer, make_mocked_request
from pydantic import SecretStr

from sinks.metrics import WatcherMetrics
from streams import watcher_web
from streams.app import WorkerApp, create_app
from streams.web import answer_failures
from streams.web_guard import REQUEST_HEADER
from tests.clocks import ManualClock
from tests.streams.agent_support import in_process_settings


class PanicException(BaseException):
    """As PyO3 raises a Rust panic: not an Exception."""


def _panic(*args: object, **kwargs: object) -> NoReturn:
    raise PanicException("index out of bounds: the len is 3 but the index is 7\nsecond line")


# (method, url, what its read calls, the route the log line names, the answer without a panic on an empty state
# with no broker); /healthz reads nothing.
ROUTES = [
    ("GET", "/status", "streams.status._read_axes", "/status", 200),
    ("GET", "/briefings/inference/latest", "streams.web._latest_body", "/briefings/{axis}/latest", 404),
    ("GET", "/browse", "streams.browser._index", "/browse", 200),
    ("GET", "/browse/note?path=inbox/jay/a.md", "streams.browser._note", "/browse/note", 404),
    ("GET", "/browse/inference/x.json", "streams.browser._briefing", "/browse/{axis}/{basename}", 404),
    ("GET", "/metrics", "sinks.metrics.Metrics.render", "/metrics", 200),
    ("GET", "/readyz", "streams.readiness.Readiness.report", "/readyz", 503),
    ("POST", "/flush?axis=nope", "streams.web._flush_commands", "/flush", 400),
]


async def _app(tmp_path: Path, **overrides: Any) -> AsyncIterator[WorkerApp]:
    built = create_app(in_process_settings(tmp_path, **overrides), ManualClock())
    yield built
    assert built.closing is not None
    await built.closing()  # closes the state the requests opened


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[WorkerApp]:
    async for built in _app(tmp_path):
        yield built


@pytest.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[WorkerApp]:
    """Reads need the bearer token."""
    async for built in _app(tmp_path, token=SecretStr("s3cret"), web_read_token=True):
        yield built


@pytest.mark.parametrize(("method", "url", "reader", "route", "answer"), ROUTES)
async def test_a_route_whose_read_panics_answers_500_and_the_next_request_as_before(
    app: WorkerApp,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    method: str,
    url: str,
    reader: str,
    route: str,
    answer: int,
) -> None:
    headers = {REQUEST_HEADER: "1"}
    async with TestClient(TestServer(app.web.web_app)) as http:  # type: ignore[attr-defined]  # aiohttp driver
        with monkeypatch.context() as patch:
            patch.setattr(reader, _panic)
            with caplog.at_level(logging.ERROR, logger="streams.web_failures"):
                failed = await http.request(method, url, headers=headers)
            assert failed.status == 500
            body = await failed.json()
            assert body["error"].endswith(
                ": PanicException: index out of bounds: the len is 3 but the index is 7"
            )
            lines = [r.getMessage() for r in caplog.records if r.name == "streams.web_failures"]
            assert len(lines) == 1 and lines[0].startswith(f"{method} {route} failed: PanicException")
        assert (await http.request(method, url, headers=headers)).status == answer


async def test_an_http_error_a_view_raises_passes_unchanged(
    app: WorkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(*args: object) -> NoReturn:
        raise web.HTTPGone(text="gone on purpose")

    monkeypatch.setattr("streams.web._latest_body", gone)
    async with TestClient(TestServer(app.web.web_app)) as http:  # type: ignore[attr-defined]
        answered = await http.get("/briefings/inference/latest")
        assert (answered.status, await answered.text()) == (410, "gone on purpose")
        assert (await http.get("/nowhere")).status == 404


async def test_an_unauthenticated_request_never_reaches_the_read(
    guarded: WorkerApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("streams.status._read_axes", _panic)
    async with TestClient(TestServer(guarded.web.web_app)) as http:  # type: ignore[attr-defined]
        assert (await http.get("/status")).status == 401
        authorised = await http.get("/status", headers={"Authorization": "Bearer s3cret"})
        assert authorised.status == 500


async def test_a_cancellation_passes_through_the_middleware() -> None:
    async def cancelled(request: web.Request) -> web.StreamResponse:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await answer_failures(make_mocked_request("GET", "/status"), cancelled)


def test_the_watchers_health_check_that_panics_answers_500_and_the_next_request_200() -> None:
    calls = iter([_panic, lambda: (True, {"ok": True})])
    server = watcher_web.serve("127.0.0.1", 0, WatcherMetrics(), {"/healthz": lambda: next(calls)()})
    url = f"http://127.0.0.1:{server.server_address[1]}/healthz"
    try:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(url, timeout=5)
        assert failed.value.code == 500
        assert json.loads(failed.value.read()) == {
            "error": "the state could not be read: PanicException: index out of bounds: the len is 3 but the index is 7"
        }
        with urllib.request.urlopen(url, timeout=5) as answered:
            assert (answered.status, json.loads(answered.read())) == (200, {"ok": True})
    finally:
        server.shutdown()
        server.server_close()
