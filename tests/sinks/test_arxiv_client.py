"""ArxivClient against a real local HTTP server replaying recorded arXiv responses; time is injected."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient, ArxivPolicy
from sinks.enrichment import Enricher
from sinks.metrics import Metrics
from streams.worker_process import free_port
from tests.arxiv_server import Fail, FakeArxiv, Stall, fake_arxiv
from tests.clocks import ManualClock

HEAT_BATH = "Heat-bath random walks with Markov bases"


@pytest.fixture
def server() -> Iterator[FakeArxiv]:
    with fake_arxiv() as fake:
        yield fake


@pytest.fixture
def fake_time() -> ManualClock:
    return ManualClock()  # moves only when the code under test sleeps


@pytest.fixture
async def http(fake_time: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    sent_at: list[float] = []

    async def stamp(request: httpx.Request) -> None:
        sent_at.append(fake_time.monotonic())

    async with httpx.AsyncClient(event_hooks={"request": [stamp]}) as client:
        client.sent_at = sent_at  # type: ignore[attr-defined]
        yield client


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def make_client(
    server: FakeArxiv, http: httpx.AsyncClient, fake_time: ManualClock, metrics: Metrics
) -> Callable[..., ArxivClient]:
    def make(**kw: Any) -> ArxivClient:
        policy = ArxivPolicy(**{"base_url": server.url, "timeout_seconds": 5.0, **kw})
        return ArxivClient(http, policy, metrics=metrics, clock=fake_time)

    return make


def outcomes(metrics: Metrics) -> dict[str, float]:
    return {
        s.labels["outcome"]: s.value
        for m in metrics.arxiv_requests.collect()
        for s in m.samples
        if s.name.endswith("_total")
    }


async def test_two_ids_go_in_one_request(server: FakeArxiv, make_client: Callable[..., ArxivClient]) -> None:
    lookup = await make_client().lookup(["0808.05394", "1707.08567v1"])
    assert server.id_lists == ["0808.05394,1707.08567"]
    assert server.requests[0]["max_results"] == "2"
    assert lookup.found["1707.08567"].title.startswith("Proceedings of Workshop AEW10")
    assert lookup.not_found == {"0808.05394"}  # the API answered, and has no such paper


async def test_batch_size_splits_the_id_list(
    server: FakeArxiv, make_client: Callable[..., ArxivClient]
) -> None:
    found = await make_client(batch_size=1).fetch(["1605.08386", "astro-ph/0601001", "2104.12255"])
    assert server.id_lists == ["1605.08386", "astro-ph/0601001", "2104.12255"]
    assert found["astro-ph/0601001"].primary_category == "astro-ph"
    assert found["2104.12255"].title == "0"


async def test_requests_are_at_least_three_seconds_apart_across_calls(
    server: FakeArxiv,
    make_client: Callable[..., ArxivClient],
    http: httpx.AsyncClient,
    fake_time: ManualClock,
) -> None:
    client = make_client()
    await client.fetch(["1605.08386"])
    await client.fetch(["1707.08567"])
    await asyncio.gather(client.fetch(["astro-ph/0601001"]), client.fetch(["quant-ph/0201082"]))
    sent: list[float] = http.sent_at  # type: ignore[attr-defined]
    assert len(sent) == 4
    assert sent[0] == 1000.0  # the first request does not wait
    assert all(b - a >= 3.0 for a, b in itertools.pairwise(sent)), sent


async def test_503_is_retried_with_back_off_then_succeeds(
    server: FakeArxiv, make_client: Callable[..., ArxivClient], fake_time: ManualClock, metrics: Metrics
) -> None:
    server.script = [Fail(503)]
    found = await make_client(backoff_seconds=2.0).fetch(["1605.08386"])
    assert found["1605.08386"].title == HEAT_BATH
    assert server.id_lists == ["1605.08386", "1605.08386"]
    assert fake_time.sleeps[0] >= 2.0  # the back-off, before the rate limiter's own wait
    assert outcomes(metrics) == {"error": 1.0, "ok": 1.0}


async def test_429_honours_retry_after(
    server: FakeArxiv, make_client: Callable[..., ArxivClient], fake_time: ManualClock
) -> None:
    server.script = [Fail(429, retry_after=7)]
    found = await make_client().fetch(["1605.08386"])
    assert "1605.08386" in found
    assert fake_time.sleeps[0] == 7.0


async def test_400_is_not_retried_and_the_bad_id_is_isolated(
    server: FakeArxiv, make_client: Callable[..., ArxivClient], metrics: Metrics
) -> None:
    lookup = await make_client().lookup(["1605.08386", "abc"])
    assert server.id_lists == ["1605.08386,abc", "1605.08386", "abc"]  # each asked once, never repeated
    assert set(lookup.found) == {"1605.08386"}
    assert lookup.invalid == {"abc"}
    assert outcomes(metrics) == {"bad_request": 2.0, "ok": 1.0}


async def test_a_timeout_is_retried(server: FakeArxiv, make_client: Callable[..., ArxivClient]) -> None:
    server.script = [Stall(3.0)]
    found = await make_client(timeout_seconds=0.3).fetch(["1605.08386"])
    assert found["1605.08386"].title == HEAT_BATH
    assert len(server.requests) == 2


async def test_timeouts_every_time_give_an_empty_result_not_an_exception(
    server: FakeArxiv, make_client: Callable[..., ArxivClient], metrics: Metrics
) -> None:
    server.script = [Stall(3.0), Stall(3.0)]
    found = await make_client(timeout_seconds=0.3, max_retries=1).fetch(["1605.08386"])
    assert found == {}
    assert outcomes(metrics) == {"timeout": 2.0}


async def test_nonexistent_id_is_absent_and_negatively_cached(
    server: FakeArxiv, make_client: Callable[..., ArxivClient], tmp_path: Path, metrics: Metrics
) -> None:
    assert await make_client().fetch(["0000.0000"]) == {}
    assert outcomes(metrics) == {"not_found": 1.0}

    # Through the enricher: a real id arXiv does not know is asked once, then remembered.
    cache = ArxivCache(tmp_path / "arxiv-cache.duckdb")
    server.recordings[frozenset({"2609.99999"})] = server.recordings[frozenset({"0000.0000"})]
    enricher = Enricher(cache, make_client(), metrics)
    assert await enricher.enrich(["2609.99999"]) == {}
    assert await enricher.enrich(["2609.99999"]) == {}
    assert server.id_lists.count("2609.99999") == 1
    assert cache.known_missing(["2609.99999"]) == {"2609.99999"}


async def test_an_unreachable_api_gives_an_empty_result_and_stops_early(
    http: httpx.AsyncClient, fake_time: ManualClock, metrics: Metrics
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/api/query"
    client = ArxivClient(
        http, ArxivPolicy(base_url=closed, batch_size=1, max_retries=2), clock=fake_time, metrics=metrics
    )
    found = await client.fetch(["1605.08386", "1707.08567", "2104.12255"])
    assert found == {}
    sent: list[float] = http.sent_at  # type: ignore[attr-defined]
    assert len(sent) == 3  # three attempts for the first batch; the other batches are not tried
    assert outcomes(metrics) == {"error": 3.0}


async def test_a_body_that_is_not_atom_is_retried_then_given_up(
    server: FakeArxiv, make_client: Callable[..., ArxivClient]
) -> None:
    server.script = [Fail(200), Fail(200)]
    assert await make_client(max_retries=1).fetch(["1605.08386"]) == {}
    assert len(server.requests) == 2


async def test_a_wrong_url_is_not_retried(server: FakeArxiv, make_client: Callable[..., ArxivClient]) -> None:
    server.script = [Fail(404)]
    assert await make_client(batch_size=1).fetch(["1605.08386", "1707.08567"]) == {}
    assert len(server.requests) == 1
