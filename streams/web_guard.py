"""Who may change state over the worker's web port (a script or the CLI, never a web page the operator has open,
and with the bearer token when one is set), and whether the server may start on the address it is given."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from streams.errors import ConfigError
from streams.settings import Settings

# A header no HTML form can send and no cross-site script can send without a CORS preflight, which the
# worker never grants: a POST carrying it comes from a script or the CLI, not from a page in a browser.
REQUEST_HEADER = "X-Predigest-Request"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

WebRefusal = Literal[
    "cross_site",  # the browser says so: Sec-Fetch-Site is not same-origin / none
    "foreign_origin",  # Origin is not one of the server's own
    "not_a_script",  # the X-Predigest-Request header is missing: what a form or a simple fetch sends
    "token",  # no, or the wrong, bearer token
]
WEB_REFUSALS: tuple[WebRefusal, ...] = get_args(WebRefusal)


@dataclass(frozen=True)
class Refusal:
    """Why a state-changing request is refused: a code for the metric, a status and a line for the caller."""

    reason: WebRefusal
    status: int
    message: str


def own_origins(settings: Settings) -> frozenset[str]:
    """The origins of pages served from this worker's own address, and the ones `web_origins` adds (a proxy)."""
    wildcard = settings.web_host in ("0.0.0.0", "::", "")  # every address of the machine, loopback too
    hosts = set(LOOPBACK_NAMES) if wildcard or is_loopback(settings.web_host) else set()
    if not wildcard:
        hosts.add(f"[{settings.web_host}]" if ":" in settings.web_host else settings.web_host)
    port = settings.web_port
    origins = {f"http://{h}:{port}" for h in hosts} | (
        {f"http://{h}" for h in hosts} if port == 80 else set()
    )
    return frozenset(o.lower() for o in origins) | {o.rstrip("/").lower() for o in settings.web_origins}


def post_refusal(settings: Settings, headers: Mapping[str, str]) -> Refusal | None:
    """None when a state-changing request may go ahead; checked before anything else, token or not."""
    h = {k.lower(): v for k, v in headers.items()}
    fetch_site = h.get("sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none"):
        return Refusal(
            "cross_site", 403, f"a cross-site request (Sec-Fetch-Site: {fetch_site[:40]}) cannot flush"
        )
    origin = h.get("origin")
    if origin is not None and origin.strip().rstrip("/").lower() not in own_origins(settings):
        return Refusal(
            "foreign_origin", 403, "a request from another origin cannot flush (web_origins lists extra ones)"
        )
    if not h.get(REQUEST_HEADER.lower(), "").strip():
        return Refusal(
            "not_a_script",
            403,
            f"POST needs the header `{REQUEST_HEADER}: 1` (it keeps web pages from posting here)",
        )
    if not authorised(settings, h.get("authorization")):
        return Refusal("token", 401, "missing or wrong bearer token")
    return None


def read_refusal(settings: Settings, headers: Mapping[str, str]) -> Refusal | None:
    """None when a read route (status, briefings, the browser) may answer: always, unless `web_read_token`."""
    if not settings.web_read_token:
        return None
    h = {k.lower(): v for k, v in headers.items()}
    if authorised(settings, h.get("authorization")):
        return None
    return Refusal("token", 401, "missing or wrong bearer token (web_read_token puts reads behind it)")


def authorised(settings: Settings, header: str | None) -> bool:
    """State-changing routes need the bearer token when one is configured (any other scheme is refused)."""
    if settings.token is None:
        return True
    scheme, _, credentials = (header or "").strip().partition(" ")
    # The scheme is case-insensitive (RFC 7235); the token is compared in constant time.
    return scheme.lower() == "bearer" and hmac.compare_digest(
        credentials.strip().encode(), settings.token.get_secret_value().encode()
    )


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (a name other than localhost may resolve anywhere)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(settings: Settings) -> str | None:
    """ConfigError for a web port others can reach with no token; the warning to log when that is opted into."""
    if is_loopback(settings.web_host) or settings.token is not None:
        return None
    if not settings.web_allow_no_token:
        raise ConfigError(
            f"web_host {settings.web_host} is reachable from other machines and no token is set: set "
            "PREDIGEST_TOKEN, bind 127.0.0.1, or set PREDIGEST_WEB_ALLOW_NO_TOKEN=true to accept the risk"
        )
    return (
        f"WARNING: web_host {settings.web_host} without a token (web_allow_no_token): anyone who can reach "
        f"port {settings.web_port} can flush every axis"
    )
