"""Web views on the worker's Faust server: metrics, health, readiness, status, flush, latest briefing, and the
briefing browser (streams.browser); `answer_failures`, the middleware that answers any of them failing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import faust
from aiohttp import web
from aiohttp.typedefs import Handler
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST

from processors.models import ControlCommand
from sinks.metrics import Metrics
from sinks.state_reader import StateReader
from streams.browser import HEADERS, Browser, Page
from streams.control import checked_command
from streams.errors import CommandRefusedError
from streams.failstop import PASSES_THROUGH
from streams.services import Services
from streams.settings import Settings
from streams.topics import SendCommand
from streams.web_failures import failed_body
from streams.web_guard import Refusal, post_refusal, read_refusal

log = logging.getLogger(__name__)


def register_views(app: faust.App, services: Services, send_command: SendCommand) -> None:
    """The worker's pages; the state is read through the services, so the first request may open it."""
    guard = _Guard(services.settings, services.metrics)
    _register_probes(app, services)
    _register_reads(app, services, guard)
    _register_flush(app, services, guard, send_command)
    _register_browser(app, services, guard)


@dataclass(frozen=True)
class _Guard:
    """The door of every route but the probes: a request the web rules (streams.web_guard) refuse is counted,
    logged and answered here."""

    settings: Settings
    metrics: Metrics

    def read(self, view: View, request: Request, route: str) -> Response | None:
        """None when the request may read; otherwise the refusal's answer (`web_read_token`)."""
        refused = read_refusal(self.settings, request.headers)
        return None if refused is None else self._refuse(view, route, refused)

    def post(self, view: View, request: Request, route: str) -> Response | None:
        """None when the request may change state: no web page, and the token when one is set."""
        refused = post_refusal(self.settings, request.headers)
        return None if refused is None else self._refuse(view, route, refused)

    def _refuse(self, view: View, route: str, refused: Refusal) -> Response:
        self.metrics.web_requests_refused.labels(reason=refused.reason).inc()
        log.warning("refused %s: %s (%s)", route, refused.reason, refused.message)
        challenge = {"WWW-Authenticate": 'Bearer realm="predigest"'} if refused.status == 401 else {}
        body = {"error": refused.message, "reason": refused.reason}
        return view.json(body, status=refused.status, headers=challenge)


def _register_probes(app: faust.App, services: Services) -> None:
    """What Prometheus and the supervisor ask: `/metrics`, `/healthz`, `/readyz` (no token: they carry none)."""

    @app.page("/metrics")
    class MetricsView(View):
        async def get(self, request: Request) -> Response:
            # aiohttp refuses a charset inside content_type=, so the exposition type goes in as a header.
            return self.bytes(services.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    @app.page("/healthz")
    class Health(View):
        async def get(self, request: Request) -> Response:
            # Alive: the event loop answered. Whether the worker does its work is /readyz.
            return self.json({"status": "ok"})

    @app.page("/readyz")
    class Ready(View):
        async def get(self, request: Request) -> Response:
            ready, body = await services.readiness.report()
            return self.json(body, status=200 if ready else 503)


def _register_reads(app: faust.App, services: Services, guard: _Guard) -> None:
    """`GET /status` and `GET /briefings/{axis}/latest`, under the read rules."""

    @app.page("/status")
    class Status(View):
        async def get(self, request: Request) -> Response:
            if (refused := guard.read(self, request, "GET /status")) is not None:
                return refused
            # A snapshot at most status_refresh_seconds old, read off the event loop: pollers cannot slow ingest.
            body = await services.status.get()
            body["briefing_failures"] = services.outbox.report()  # axes whose briefings cannot be written
            return self.json(body)

    @app.page("/briefings/{axis}/latest")
    class Latest(View):
        async def get(self, request: Request, axis: str) -> Response:
            if (refused := guard.read(self, request, f"GET /briefings/{axis[:40]!r}/latest")) is not None:
                return refused
            # ~80 MB of JSON at 100k sources: read and parsed in a thread, or the worker's heartbeats wait; the
            # reader is opened there too (it waits for a batch being committed).
            state = services.pipeline().state
            body = await asyncio.to_thread(lambda: _latest_body(state.reader(), axis))
            if body is None:
                return self.json({"error": f"no briefing for axis {axis!r} yet"}, status=404)
            return self.json(body)


@web.middleware
async def answer_failures(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every route's failure, a Rust panic too, answered 500 (streams.web_failures); an HTTP error a view raises on
    purpose, a cancellation and the process's exit pass unchanged."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except BaseException as exc:
        if isinstance(exc, PASSES_THROUGH):
            raise
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "?"  # the pattern: no client input in the log
        return web.json_response(failed_body(request.method, route, exc), status=500)


def _latest_body(reader: StateReader, axis: str) -> dict[str, Any] | None:
    """The axis's latest briefing as `GET /briefings/{axis}/latest` answers it; None before the first."""
    with reader:
        briefing = reader.emissions.latest(axis)
    return None if briefing is None else briefing.model_dump(mode="json", by_alias=True)


def _register_flush(app: faust.App, services: Services, guard: _Guard, send_command: SendCommand) -> None:
    """`POST /flush?axis=…&end=…`: queue a flush of one axis or all, answered 202 with the commands sent."""

    @app.page("/flush")
    class Flush(View):
        async def post(self, request: Request) -> Response:
            # Every state-changing route starts with this check.
            if (refused := guard.post(self, request, "POST /flush")) is not None:
                return refused
            commands = _flush_commands(services.settings, services.clock.now(), request.query)
            if isinstance(commands, dict):
                return self.json(commands, status=400)
            sent = [(await send_command(c)).model_dump(mode="json") for c in commands]
            return self.json({"queued": sent}, status=202)


def _flush_commands(
    settings: Settings, now: datetime, query: Mapping[str, str]
) -> list[ControlCommand] | dict[str, Any]:
    """The flush commands a query asks for, or the body of the 400 that says what is wrong with it."""
    axis = query.get("axis")
    names: list[str] = [a.name for a in settings.axes] if not axis or axis == "all" else [axis]
    unknown = [n for n in names if settings.axis(n) is None]
    if unknown:
        return {"error": f"unknown axis {unknown}", "axes": [a.name for a in settings.axes]}
    default_end = now.replace(microsecond=0)  # to the second, as the briefing's file name shows it
    try:
        end = datetime.fromisoformat(query["end"]) if "end" in query else default_end
    except ValueError:
        return {"error": "end must be ISO 8601 with an offset"}
    try:
        # Every command is checked before the first is sent: axis=all is all or nothing.
        return [checked_command(settings, n, "flush", end, now) for n in names]
    except CommandRefusedError as exc:
        return {"error": str(exc), "reason": exc.reason}


def _register_browser(app: faust.App, services: Services, guard: _Guard) -> None:
    """The briefing browser's pages (streams.browser), under the read rules."""
    browser = Browser(services.settings, services.pipeline, services.clock)

    @app.page("/browse")
    class BrowseIndex(View):
        async def get(self, request: Request) -> Response:
            if (refused := guard.read(self, request, "GET /browse")) is not None:
                return refused
            return _page(self, await browser.index())

    @app.page("/browse/note")
    class BrowseNote(View):
        async def get(self, request: Request) -> Response:
            if (refused := guard.read(self, request, "GET /browse/note")) is not None:
                return refused
            path = request.query.get("path", "")
            if not path or len(path) > 1024:
                return self.json(
                    {"error": "path= names a note of the root (at most 1024 characters)"}, status=400
                )
            return _page(self, await browser.note(path))

    @app.page("/browse/{axis}/{basename}")
    class BrowseBriefing(View):
        async def get(self, request: Request, axis: str, basename: str) -> Response:
            if (refused := guard.read(self, request, "GET /browse/…")) is not None:
                return refused
            return _page(self, await browser.briefing(axis, basename[:200]))


def _page(view: View, found: Page) -> Response:
    if found.status == 404:
        return view.html(
            "<!doctype html><title>not found</title><p>not found</p>", status=404, headers=dict(HEADERS)
        )
    return view.html(found.html, headers=dict(HEADERS))
