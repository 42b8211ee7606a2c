"""Web views on the worker's Faust server: metrics, health, readiness, status, flush, latest briefing, and the
briefing browser (streams.browser)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import faust
from faust.web import Request, Response, View
from prometheus_client import CONTENT_TYPE_LATEST

from streams.browser import HEADERS, Browser, Page
from streams.control import checked_command
from streams.errors import CommandRefusedError
from streams.services import Services
from streams.topics import SendCommand
from streams.web_guard import Refusal, post_refusal, read_refusal

log = logging.getLogger(__name__)


def register_views(app: faust.App, services: Services, send_command: SendCommand) -> None:  # noqa: C901
    """The worker's pages; the state is read through the services, so the first request may open it."""
    settings, metrics, pipeline = services.settings, services.metrics, services.pipeline

    @app.page("/metrics")
    class MetricsView(View):
        async def get(self, request: Request) -> Response:
            # aiohttp refuses a charset inside content_type=, so the exposition type goes in as a header.
            return self.bytes(metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

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

    def refuse(view: View, route: str, refused: Refusal) -> Response:
        metrics.web_requests_refused.labels(reason=refused.reason).inc()
        log.warning("refused %s: %s (%s)", route, refused.reason, refused.message)
        challenge = {"WWW-Authenticate": 'Bearer realm="predigest"'} if refused.status == 401 else {}
        body = {"error": refused.message, "reason": refused.reason}
        return view.json(body, status=refused.status, headers=challenge)

    @app.page("/status")
    class Status(View):
        async def get(self, request: Request) -> Response:
            refused = read_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, "GET /status", refused)
            # A snapshot at most status_refresh_seconds old, read off the event loop: pollers cannot slow ingest.
            body = await services.status.get()
            body["briefing_failures"] = services.outbox.report()  # axes whose briefings cannot be written
            return self.json(body)

    @app.page("/flush")
    class Flush(View):
        async def post(self, request: Request) -> Response:
            # Every state-changing route starts with this check: no web page, and the token when one is set.
            refused = post_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, "POST /flush", refused)
            axis = request.query.get("axis")
            names: list[str] = [a.name for a in settings.axes] if not axis or axis == "all" else [axis]
            unknown = [n for n in names if settings.axis(n) is None]
            if unknown:
                return self.json(
                    {"error": f"unknown axis {unknown}", "axes": [a.name for a in settings.axes]}, status=400
                )
            now = services.clock.now()
            default_end = now.replace(microsecond=0)  # to the second, as the briefing's file name shows it
            try:
                end = datetime.fromisoformat(request.query["end"]) if "end" in request.query else default_end
            except ValueError:
                return self.json({"error": "end must be ISO 8601 with an offset"}, status=400)
            try:
                # Every command is checked before the first is sent: axis=all is all or nothing.
                commands = [checked_command(settings, n, "flush", end, now) for n in names]
            except CommandRefusedError as exc:
                return self.json({"error": str(exc), "reason": exc.reason}, status=400)
            sent = [(await send_command(c)).model_dump(mode="json") for c in commands]
            return self.json({"queued": sent}, status=202)

    @app.page("/briefings/{axis}/latest")
    class Latest(View):
        async def get(self, request: Request, axis: str) -> Response:
            refused = read_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, f"GET /briefings/{axis[:40]!r}/latest", refused)
            briefing = pipeline().state.latest_emission(axis)
            if briefing is None:
                return self.json({"error": f"no briefing for axis {axis!r} yet"}, status=404)
            body: Any = briefing.model_dump(mode="json", by_alias=True)
            return self.json(body)

    browser = Browser(settings, pipeline, services.clock)

    def page(view: View, found: Page) -> Response:
        if found.status == 404:
            return view.html(
                "<!doctype html><title>not found</title><p>not found</p>", status=404, headers=dict(HEADERS)
            )
        return view.html(found.html, headers=dict(HEADERS))

    @app.page("/browse")
    class BrowseIndex(View):
        async def get(self, request: Request) -> Response:
            refused = read_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, "GET /browse", refused)
            return page(self, await browser.index())

    @app.page("/browse/note")
    class BrowseNote(View):
        async def get(self, request: Request) -> Response:
            refused = read_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, "GET /browse/note", refused)
            path = request.query.get("path", "")
            if not path or len(path) > 1024:
                return self.json(
                    {"error": "path= names a note of the root (at most 1024 characters)"}, status=400
                )
            return page(self, await browser.note(path))

    @app.page("/browse/{axis}/{basename}")
    class BrowseBriefing(View):
        async def get(self, request: Request, axis: str, basename: str) -> Response:
            refused = read_refusal(settings, request.headers)
            if refused is not None:
                return refuse(self, "GET /browse/…", refused)
            return page(self, await browser.briefing(axis, basename[:200]))
