"""The Enricher on a real DuckDB cache and the local recorded-arXiv server: cache first, then the API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from processors.arxiv_atom import ArxivRecord
from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient, ArxivPolicy
from sinks.enrichment import EnrichedId, Enricher
from sinks.metrics import Metrics
from streams.worker_process import free_port
from tests.arxiv_server import FakeArxiv, fake_arxiv
from tests.clocks import ManualClock

HEAT_BATH = "Heat-bath random walks with Markov bases"


@pytest.fixture
def server() -> Iterator[FakeArxiv]:
    with fake_arxiv() as fake:
        yield fake


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def cache(tmp_path: Path) -> ArxivCache:
    return ArxivCache(tmp_path / "arxiv-cache.duckdb")


def client(http: httpx.AsyncClient, url: str) -> ArxivClient:
    # batch_size 1: the server only replays id lists arXiv was really asked (single ids, mostly).
    policy = ArxivPolicy(base_url=url, batch_size=1, min_interval_seconds=0.0, max_retries=1)
    return ArxivClient(http, policy, clock=ManualClock())


async def test_misses_go_to_the_api_and_are_cached(
    server: FakeArxiv, http: httpx.AsyncClient, cache: ArxivCache
) -> None:
    metrics = Metrics()
    enricher = Enricher(cache, client(http, server.url), metrics)
    first = await enricher.enrich(["1605.08386v1", "2104.12255"])
    assert first["1605.08386"].source == "arxiv_api"
    assert first["1605.08386"].record.title == HEAT_BATH
    assert first["2104.12255"].record.primary_category == "cs.CR"

    again = await enricher.enrich(["1605.08386", "2104.12255"])
    assert {i: e.source for i, e in again.items()} == {"1605.08386": "cache", "2104.12255": "cache"}
    assert again["1605.08386"].record == first["1605.08386"].record
    assert server.id_lists == ["1605.08386", "2104.12255"]  # the second call asked nobody
    assert metrics.registry.get_sample_value("predigest_arxiv_cache_hits_total") == 2.0


async def test_cache_first_then_only_the_misses(
    server: FakeArxiv, http: httpx.AsyncClient, cache: ArxivCache
) -> None:
    cache.put_many([ArxivRecord(id="1605.08386", title="Cached title")])
    got = await Enricher(cache, client(http, server.url), Metrics()).enrich(
        ["1605.08386", "astro-ph/0601001"]
    )
    assert got["1605.08386"] == EnrichedId(
        record=ArxivRecord(id="1605.08386", title="Cached title"), source="cache"
    )
    assert got["astro-ph/0601001"].source == "arxiv_api"
    assert server.id_lists == ["astro-ph/0601001"]


async def test_api_off_uses_only_the_cache(cache: ArxivCache) -> None:
    cache.put_many([ArxivRecord(id="1605.08386", title="Cached title")])
    got = await Enricher(cache, None, Metrics()).enrich(["1605.08386", "2609.23130"])
    assert list(got) == ["1605.08386"]  # 2609.23130 falls back to the documents


async def test_unreachable_api_leaves_ids_unverified_without_raising(
    http: httpx.AsyncClient, cache: ArxivCache
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/api/query"
    got = await Enricher(cache, client(http, closed), Metrics()).enrich(["1605.08386", "2609.23130"])
    assert got == {}
    assert cache.get_many(["1605.08386"]) == {} and cache.known_missing(["1605.08386"]) == set()


async def test_malformed_ids_are_never_sent(
    server: FakeArxiv, http: httpx.AsyncClient, cache: ArxivCache
) -> None:
    got = await Enricher(cache, client(http, server.url), Metrics()).enrich(["abc", "0000.0000", ""])
    assert got == {} and server.requests == []
