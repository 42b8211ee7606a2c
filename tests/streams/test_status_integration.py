"""A real worker's `GET /status`: a snapshot pollers share, behind the token when `web_read_token` is set, whose
parse (raw-topic) lag is what the lag gauges show."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from streams import kafka_io
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOKEN = "tok-read-5e1f"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _lag_gauges(s: Settings, topic: str) -> dict[str, int]:
    """partition → predigest_consumer_lag_messages of one topic, as Prometheus scrapes it."""
    found: dict[str, int] = {}
    for line in httpx.get(worker_url(s, "/metrics"), timeout=5).text.splitlines():
        if line.startswith("predigest_consumer_lag_messages{") and f'topic="{topic}"' in line:
            partition = line.split('partition="', 1)[1].split('"', 1)[0]
            found[partition] = int(float(line.rsplit(" ", 1)[1]))
    return found


async def _until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        await asyncio.sleep(0.3)


async def _publish(s: Settings, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.root / rel).write_text(text, encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())


async def test_status_is_a_shared_snapshot_behind_the_token_showing_the_gauges_lag(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The gauges' own timer is slowed down, so that every lag probe here is one /status asked for.
    s = make_settings(
        token=SecretStr(TOKEN), web_read_token=True, status_refresh_seconds=2.0, metrics_interval_seconds=600
    )
    await kafka_io.ensure_topics(s)
    await _publish(s, {"inbox/jay/2026-09-27-0900-a.md": "# a\n\nvLLM KV cache serving.\n"})
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        async with httpx.AsyncClient(timeout=10) as http:
            url = worker_url(s, "/status")
            assert (await http.get(url)).status_code == 401  # reads behind the token
            for read in ("/briefings/inference/latest", "/browse", "/browse/note?path=inbox/jay/x.md"):
                assert (await http.get(worker_url(s, read))).status_code == 401, read
            browse = await http.get(worker_url(s, "/browse"), headers=AUTH)
            assert browse.status_code == 200 and "text/html" in browse.headers["content-type"]
            for open_path in ("/healthz", "/metrics"):  # probes and Prometheus need none
                assert (await http.get(worker_url(s, open_path))).status_code == 200, open_path

            async def status() -> dict[str, object]:
                answer = await http.get(url, headers=AUTH)
                assert answer.status_code == 200, answer.text
                body: dict[str, object] = answer.json()
                return body

            async def docs_seen(n: int) -> bool:
                body = await status()
                return not body["catching_up"] and any(
                    e["axis"] == "inference" and e["stored"]["documents"] == n
                    for e in body["axes"]  # type: ignore[attr-defined]
                )

            await _until(lambda: docs_seen(1), 60, "the first note in /status")
            first, second = await asyncio.gather(status(), status())
            assert first["snapshot"]["taken_at"] == second["snapshot"]["taken_at"]  # type: ignore[index]

            lag = first["lag"]
            assert lag["ok"] and lag["parse"] == sum(lag["raw"].values()) == 0  # type: ignore[index]
            # What status says is what Prometheus scrapes: the same probe set both.
            assert lag["raw"] == _lag_gauges(s, s.kafka.topic("raw"))  # type: ignore[index]
            assert lag["documents"] == _lag_gauges(s, s.kafka.topic("documents"))  # type: ignore[index]

            await _publish(s, {"inbox/tom/2026-09-27-1000-b.md": "# b\n\nSGLang speculative decoding.\n"})
            await wait_ingested(s, 60)
            # A later snapshot (at most status_refresh_seconds later) shows the new note.
            await _until(lambda: docs_seen(2), 20, "the second note in /status")
