"""`/healthz` says the worker is alive, `/readyz` whether it works: a state file damaged under the running worker
makes it fail, naming the state, until the worker has set the file aside and rebuilt it from Kafka."""

from __future__ import annotations

import asyncio
import os
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from processors.models import Briefing
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import async_wait_for, running_worker, wait_for, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
NOTES = {
    "inbox/jay/2026-09-27-0900-kv.md": "# KV cache 推理\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2%.\n",
    "inbox/jay/2026-09-27-0930-kv-repost.md": "# KV cache 推理\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2%.\n",
    "inbox/tom/2026-09-27-1000-spec.md": "# Speculative decoding\n\ninference speedup 3.8× with SGLang.\n",
    "living/inference.md": "# inference.md v3.1\n\n## §3 Serving\n\n### §3.3 Cache Compression\n\nKV cache.\n",
}
# Enough notes (1.4 MB of incompressible text) that the rebuild replays several records and lasts ~0.5 s: with the
# four notes alone it took ~0.1 s, which could fall between two of the poller's answers (CI, 2026-12-04).
FILLER = {
    f"inbox/spark/2026-09-27-11{i:02d}-log.md": f"# Serving log {i}\n\n"
    + "".join(f"- batch {i}-{j}: {random.Random(i * 1000 + j).getrandbits(256):x}\n" for j in range(300))
    for i in range(60)
}


def readyz(s: Settings) -> tuple[int, dict[str, Any]]:
    try:
        answer = httpx.get(worker_url(s, "/readyz"), timeout=10)
        return answer.status_code, answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        return 0, {"error": str(exc)}  # the poller goes on, and the answer is kept for the assertions


def healthz(s: Settings) -> Any:
    return httpx.get(worker_url(s, "/healthz"), timeout=5).json()


def metric(s: Settings, line_start: str) -> float:
    for line in httpx.get(worker_url(s, "/metrics"), timeout=5).text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@contextmanager
def watching_readiness(s: Settings) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """Every answer of /readyz, asked every 10 ms in a thread while the block runs."""
    seen: list[tuple[int, dict[str, Any]]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            seen.append(readyz(s))
            stop.wait(0.01)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=15)


def _comparable(b: Briefing) -> dict[str, Any]:
    body = b.model_dump(mode="json", by_alias=True)
    del body["generated_at"], body["trigger"]
    return body


async def _published(s: Settings) -> None:
    await kafka_io.ensure_topics(s)
    for rel, text in (NOTES | FILLER).items():
        (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.root / rel).write_text(text, encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())


async def test_a_state_file_cut_under_the_running_worker_fails_readiness_and_is_rebuilt_in_place(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(state_check_seconds=1.0, metrics_interval_seconds=1.0)
    await _published(s)
    with running_worker(s, tmp_path, "worker") as proc:
        assert healthz(s) == {"status": "ok"}
        await wait_ingested(s, 60)
        wait_for(lambda: readyz(s)[0] == 200, 60, "the worker to be ready")
        body = readyz(s)[1]
        assert body["not_ready"] == [] and all(c["ok"] for c in body["checks"].values())
        assert body["checks"]["state"]["checked_at"] is not None  # the periodic check runs
        await send_command(s, "inference", "flush", END)
        first = await await_briefing(s, "inference", END, "flush", 60)

        with watching_readiness(s) as seen:
            # What a disk fault leaves: the file cut to half its size while DuckDB has it open.
            os.truncate(s.state_file, s.state_file.stat().st_size // 2)
            await async_wait_for(
                lambda: bool(list(s.state_dir.glob("worker.duckdb.unreadable-*"))), 30, "the file set aside"
            )
            await async_wait_for(lambda: readyz(s)[0] == 200, 60, "the worker to be ready again")
        failed = [body for code, body in seen if code == 503]
        assert failed, f"readiness never failed while the state was rebuilt: {seen[-40:]}"
        # It named the state, and the catch-up while the new file was rebuilt; it never answered from half a state.
        assert {"state", "catch_up"} & {name for body in failed for name in body["not_ready"]}
        problems = [b["checks"]["state"]["problem"] for b in failed if b["checks"]["state"]["problem"]]
        assert any("truncated" in p for p in problems), problems
        assert not any(str(s.state_dir) in str(b) for _, b in seen)  # no folder of the machine in the answer
        assert proc.poll() is None  # no restart: rebuilt in place
        assert metric(s, 'predigest_state_set_aside_total{reason="unreadable"}') == 1.0
        assert "truncated" in readyz(s)[1]["checks"]["state"]["last_rebuilt_after"]

        # The rebuilt state knows the flush it emitted (from the briefings topic) and briefs the same window alike.
        line = 'predigest_briefing_commands_repeated_total{axis="inference",trigger="flush"}'
        await send_command(s, "inference", "flush", END)
        await async_wait_for(lambda: metric(s, line) == 1.0, 30, "the repeated flush")
        await send_command(s, "inference", "close", END)
        closed = await await_briefing(s, "inference", END, "close", 60)
    assert _comparable(closed) == _comparable(first)
    assert {src.path for src in closed.sources} == {p for p in NOTES | FILLER if p.startswith("inbox/")}
