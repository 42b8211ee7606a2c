"""A real local HTTP server that answers like the arXiv API from the recorded responses."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from processors.arxiv_ids import strip_version

RECORDINGS = Path(__file__).resolve().parent / "corpus/arxiv_api/lukasschwab_arxiv.py_fixtures/json"
PATH = "/api/query"


def _key(id_list: str) -> frozenset[str]:
    return frozenset(strip_version(i) for i in id_list.split(",") if i)


def load_recordings() -> dict[frozenset[str], tuple[int, bytes]]:
    """(status, body) by the set of requested ids, versions ignored; search recordings left out."""
    out: dict[frozenset[str], tuple[int, bytes]] = {}
    for path in sorted(RECORDINGS.glob("id_*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        id_list = parse_qs(urlsplit(rec["url"]).query)["id_list"][0]
        # The recorder decoded the UTF-8 bytes as Latin-1; encoding back gives the bytes arXiv sent.
        out[_key(id_list)] = (int(rec["status_code"]), rec["body"].encode("latin-1"))
    return out


@dataclass(frozen=True)
class Fail:
    """Answer the next request with this status (and Retry-After, if given) instead of the recording."""

    status: int
    retry_after: int | None = None
    body: bytes = b"<html><body>Service Unavailable</body></html>"


@dataclass(frozen=True)
class Stall:
    """Hold the next request this long before answering it (longer than the client's timeout)."""

    seconds: float


@dataclass
class FakeArxiv:
    url: str
    recordings: dict[frozenset[str], tuple[int, bytes]]
    script: list[Fail | Stall] = field(default_factory=list)  # consumed one per request, first first
    requests: list[dict[str, str]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, query: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
        with self.lock:
            self.requests.append(query)
            action = self.script.pop(0) if self.script else None
        if isinstance(action, Stall):
            self.released.wait(action.seconds)
        elif isinstance(action, Fail):
            headers = {"Retry-After": str(action.retry_after)} if action.retry_after is not None else {}
            return action.status, action.body, headers
        key = _key(query.get("id_list", ""))
        if key in self.recordings:
            status, body = self.recordings[key]
            return status, body, {}
        # Like arXiv: one malformed id makes the whole request a 400 with its error feed.
        for bad, (status, body) in self.recordings.items():
            if status == 400 and bad <= key:
                return status, body, {}
        return 404, b"no recording for id_list=" + query.get("id_list", "").encode(), {}

    @property
    def id_lists(self) -> list[str]:
        return [q.get("id_list", "") for q in self.requests]


def _handler(fake: FakeArxiv) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            split = urlsplit(self.path)
            if split.path != PATH:
                self.send_error(404)
                return
            query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            status, body, headers = fake.answer(query)
            with contextlib.suppress(OSError):  # the client may have timed out and gone
                self.send_response(status)
                self.send_header("Content-Type", "application/atom+xml; charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the tests assert on `requests`; no stderr noise

    return Handler


@contextlib.contextmanager
def fake_arxiv() -> Iterator[FakeArxiv]:
    """The server on 127.0.0.1 on a free port, in a thread, so another process can call it too."""
    fake = FakeArxiv(url="", recordings=load_recordings())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}{PATH}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-arxiv", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.released.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
