"""What a web view whose work failed answers, on the worker's server and the watcher's alike: one log line and a
500 that says it in one line; the next request works again.

A Rust panic (PyO3's `PanicException`) is a `BaseException`, which aiohttp does not answer: the connection would
drop. A cancellation or the process's exit (`failstop.PASSES_THROUGH`) is no failure and is never answered here.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def failed_body(method: str, route: str, exc: BaseException) -> dict[str, Any]:
    """Log `<method> <route> failed: …` with the traceback; the JSON body of the 500 that answers it."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    what = f"{type(exc).__name__}: {first}".rstrip(": ")
    log.error(
        "%s %s failed: %s; answered 500, the next request runs again", method, route, what, exc_info=exc
    )
    # A read (GET, HEAD) reads the state or the process's own figures; /flush is the one other route.
    failure = "the state could not be read" if method in ("GET", "HEAD") else "the request failed"
    return {"error": f"{failure}: {what}"}
