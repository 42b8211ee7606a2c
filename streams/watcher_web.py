"""The watcher's own HTTP server, in a thread beside its loop: `/metrics`, `/healthz` that fails when the loop
stalls (a thread still answers while the loop is stuck, which is the point) and `/readyz`."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from sinks.metrics import WatcherMetrics
from streams.errors import ConfigError
from streams.failstop import PASSES_THROUGH
from streams.preflight import port_message
from streams.web_failures import failed_body

log = logging.getLogger(__name__)

Health = Callable[[], tuple[bool, dict[str, Any]]]  # (healthy, what /healthz or /readyz shows)
StartResponse = Callable[..., Any]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every 15 s would otherwise fill the log."""


def health_app(
    metrics: WatcherMetrics, checks: Mapping[str, Health]
) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """Each path of `checks` (200 or 503, JSON); every other path is the Prometheus exposition."""
    exposition = make_wsgi_app(metrics.registry)

    def answer(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        check = checks.get(environ.get("PATH_INFO", ""))
        if check is None:
            return exposition(environ, start_response)  # type: ignore[no-any-return]
        ok, body = check()
        status = "200 OK" if ok else "503 Service Unavailable"
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            return answer(environ, start_response)
        # A panic too (a BaseException), answered as the worker's views answer it (streams.web_failures).
        except BaseException as exc:
            if isinstance(exc, PASSES_THROUGH):
                raise
            path = environ.get("PATH_INFO", "")
            route = path if path in checks else "/metrics"  # the route, not what the client sent
            method = str(environ.get("REQUEST_METHOD", ""))[:10]
            body = failed_body(method if method.isalpha() else "?", route, exc)
            start_response(
                "500 Internal Server Error", [("Content-Type", "application/json")], sys.exc_info()
            )
            return [json.dumps(body).encode()]

    return app


def serve(host: str, port: int, metrics: WatcherMetrics, checks: Mapping[str, Health]) -> WSGIServer:
    """Serve in a daemon thread; ConfigError when the port is taken: a watcher nobody can scrape or probe would
    look dead to Prometheus and to `run`, which advertises the port."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

        class _ServerOfFamily(_Server):
            address_family = family  # an IPv6 web_host (::1) too

        app = health_app(metrics, checks)
        server: WSGIServer = make_server(host, port, app, _ServerOfFamily, handler_class=_QuietHandler)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ConfigError(port_message(host, port, "watcher_metrics_port", why)) from None
    threading.Thread(target=server.serve_forever, name="watcher-web", daemon=True).start()
    log.info("watcher metrics at http://%s:%d/metrics, health at /healthz and /readyz", host, port)
    return server
