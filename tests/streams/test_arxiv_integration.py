"""A real worker enriches the briefing's arXiv ids from a local server replaying recorded arXiv answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import ArxivSettings, Settings
from streams.watcher import publish_root
from streams.worker_process import free_port
from tests.arxiv_server import FakeArxiv, fake_arxiv
from tests.support import running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
NOTE = "inbox/jay/2026-09-27-1200-bls-note.md"
TEXT = "# 推理安全笔记\n\nvLLM inference serving 参考 arXiv:1605.08386 与 https://arxiv.org/abs/2104.12255v1 。\n"


@pytest.fixture
def server() -> Iterator[FakeArxiv]:
    with fake_arxiv() as fake:
        yield fake


def fast_api(base_url: str) -> ArxivSettings:
    # A local server: no need for arXiv's 3 s; batch_size 1 because only single-id answers were recorded.
    return ArxivSettings(
        enabled=True,
        base_url=base_url,
        min_interval_seconds=0.2,
        timeout_seconds=5.0,
        max_retries=1,
        backoff_seconds=0.1,
        batch_size=1,
    )


async def scrape(s: Settings) -> str:
    async with httpx.AsyncClient() as http:
        return (await http.get(worker_url(s, "/metrics"), timeout=5)).text


async def ingest(s: Settings) -> None:
    await kafka_io.ensure_topics(s)
    (s.root / NOTE).parent.mkdir(parents=True, exist_ok=True)
    (s.root / NOTE).write_text(TEXT, encoding="utf-8")
    await publish_root(s, follow=False, stop=asyncio.Event())
    await wait_ingested(s, 60)


async def test_the_briefing_carries_the_api_titles_then_the_cached_ones(
    make_settings: Callable[..., Settings], server: FakeArxiv, tmp_path: Path
) -> None:
    s = make_settings(arxiv=fast_api(server.url))
    with running_worker(s, tmp_path):
        await ingest(s)
        await send_command(s, "inference", "flush", END)
        first = await await_briefing(s, "inference", END, "flush", 90)
        later = END + timedelta(minutes=5)  # the same note, a second window: answered from the cache
        await send_command(s, "inference", "flush", later)
        second = await await_briefing(s, "inference", later, "flush", 90)
        metrics = await scrape(s)

    entries = {a.id: a for a in first.arxiv}
    assert entries["1605.08386"].title == "Heat-bath random walks with Markov bases"
    assert entries["1605.08386"].metadata.source == "arxiv_api"
    assert entries["1605.08386"].metadata.published == "2016-05-26"
    assert entries["1605.08386"].metadata.primary_category == "math.CO"
    assert (entries["2104.12255"].title, entries["2104.12255"].metadata.source) == ("0", "arxiv_api")
    assert {a.id: a.metadata.source for a in second.arxiv} == {"1605.08386": "cache", "2104.12255": "cache"}
    assert sorted(server.id_lists) == ["1605.08386", "2104.12255"]  # each id asked once, in all
    assert 'predigest_arxiv_requests_total{outcome="ok"} 2.0' in metrics
    assert "predigest_arxiv_cache_hits_total 2.0" in metrics
    markdown = (s.out_dir / "inference" / "2026-09-27-inference-e1prep-flush-2220.md").read_text()
    assert (
        "| 1605.08386 | Heat-bath random walks with Markov bases | ★★★★ — arXiv 2016-05；arXiv API 已核验 |"
        in markdown
    )
    assert "未核验 arXiv 号：0 个" in markdown
    assert (s.state_dir / "arxiv-cache.duckdb").exists()


async def test_an_unreachable_api_still_gives_the_briefing_from_the_documents(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(arxiv=fast_api(f"http://127.0.0.1:{free_port()}/api/query"))
    with running_worker(s, tmp_path):
        await ingest(s)
        await send_command(s, "inference", "flush", END)
        briefing = await await_briefing(s, "inference", END, "flush", 90)
        metrics = await scrape(s)

    # Titles come from the note itself when it names the paper; this prose ("vLLM inference serving 参考 …")
    # names none, so the id stands for itself rather than a sentence fragment posing as a title.
    assert {a.id: (a.title, a.metadata.source) for a in briefing.arxiv} == {
        "1605.08386": ("1605.08386", "document"),
        "2104.12255": ("2104.12255", "document"),
    }
    markdown = (s.out_dir / "inference" / "2026-09-27-inference-e1prep-flush-2220.md").read_text()
    assert (
        "未核验 arXiv 号：2 个（共 2 个；标题取自文档，未经 arXiv API 或缓存核实）：1605.08386 / 2104.12255"
        in markdown
    )
    assert markdown.count("未核验（标题取自文档）") == 2
    assert (
        'predigest_arxiv_requests_total{outcome="error"} 2.0' in metrics
    )  # one batch, two attempts, then stop
