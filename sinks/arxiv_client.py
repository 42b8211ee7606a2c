"""Async arXiv API client: batched `id_list`, one request per interval, retries with back-off."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from processors.arxiv_atom import ArxivAtomError, ArxivRecord, AtomFeed, parse_feed
from processors.arxiv_ids import strip_version
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.errors import SinkError
from sinks.metrics import Metrics

log = logging.getLogger(__name__)

DEFAULT_URL = "https://export.arxiv.org/api/query"
MAX_RETRY_AFTER = 60.0


class ArxivBadRequest(SinkError):
    """HTTP 400: arXiv refused the `id_list` (a malformed id); retrying the same request is useless."""


class ArxivUnavailable(SinkError):
    """No usable answer after the retries (unreachable, timeouts, 5xx) or a status that retries won't fix."""


class _Transient(SinkError):
    """A failure worth retrying: timeout, connection error, 5xx, 429, a body that is not Atom."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class ArxivLookup:
    """What the API said about each requested id; ids in no set had no answer (see the log)."""

    found: dict[str, ArxivRecord] = field(default_factory=dict)
    not_found: frozenset[str] = frozenset()  # the API answered with no entry for the id
    invalid: frozenset[str] = frozenset()  # the API refused the id as malformed (HTTP 400)


class RateLimiter:
    """At most one request per `min_interval` seconds, across every caller of one client."""

    def __init__(self, min_interval: float, clock: Clock) -> None:
        self.min_interval = min_interval
        self._clock = clock
        self._last: float | None = None
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            if self._last is not None:
                delay = self._last + self.min_interval - self._clock.monotonic()
                if delay > 0:
                    await self._clock.sleep(delay)
            self._last = self._clock.monotonic()


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(float(response.headers.get("Retry-After", "0")), MAX_RETRY_AFTER)
    except ValueError:
        return 0.0  # an HTTP date instead of seconds: the exponential back-off decides


def _error_message(response: httpx.Response) -> str:
    """arXiv's own words from an error feed, else the status."""
    try:
        return "; ".join(parse_feed(response.content).errors) or f"HTTP {response.status_code}"
    except ArxivAtomError:
        return f"HTTP {response.status_code}"


@dataclass(frozen=True)
class ArxivPolicy:
    """Where and how politely the API is asked (the worker's `arxiv.*` settings)."""

    base_url: str = DEFAULT_URL
    batch_size: int = 50
    min_interval_seconds: float = 3.0
    timeout_seconds: float = 20.0
    max_retries: int = 3
    backoff_seconds: float = 1.0


class ArxivClient:
    """`fetch(ids)` never raises for a bad or absent API: a failed id is absent from the result."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        policy: ArxivPolicy = ArxivPolicy(),  # frozen: one shared default is safe
        *,
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._http = http
        self.base_url = policy.base_url
        self.batch_size = max(1, policy.batch_size)
        self.timeout = httpx.Timeout(policy.timeout_seconds)
        self.max_retries = policy.max_retries
        self._backoff = wait_exponential(multiplier=policy.backoff_seconds, max=MAX_RETRY_AFTER)
        self._metrics = metrics
        self._clock = clock
        self.limiter = RateLimiter(policy.min_interval_seconds, clock)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def fetch(self, ids: Iterable[str]) -> dict[str, ArxivRecord]:
        """Records by id (without version) for the ids arXiv knows; the rest are absent."""
        return (await self.lookup(ids)).found

    async def lookup(self, ids: Iterable[str]) -> ArxivLookup:
        """Ask in batches of `batch_size`; stop at the first batch the API cannot answer."""
        wanted = list(dict.fromkeys(strip_version(i) for i in ids if i.strip()))
        found: dict[str, ArxivRecord] = {}
        not_found: set[str] = set()
        invalid: set[str] = set()
        for start in range(0, len(wanted), self.batch_size):
            batch = wanted[start : start + self.batch_size]
            try:
                await self._batch(batch, found, not_found, invalid)
            except ArxivUnavailable as exc:
                left = [i for i in wanted[start:] if i not in found and i not in not_found | invalid]
                # Once the API is out of reach, later batches would only wait out the same retries.
                log.warning(
                    "arXiv API unavailable (%s); %d id(s) stay unverified: %s",
                    exc,
                    len(left),
                    ", ".join(left[:10]) + (" …" if len(left) > 10 else ""),
                )
                break
        for i in sorted(not_found):
            log.info("arXiv has no paper %s", i)
        return ArxivLookup(found=found, not_found=frozenset(not_found), invalid=frozenset(invalid))

    async def _batch(
        self, batch: Sequence[str], found: dict[str, ArxivRecord], not_found: set[str], invalid: set[str]
    ) -> None:
        try:
            feed = await self._request(batch)
        except ArxivBadRequest as exc:
            if len(batch) == 1:
                log.warning("arXiv API refused id %r: %s", batch[0], exc)
                invalid.add(batch[0])
                return
            # One malformed id fails the whole request; halving isolates it in log2(n) extra requests.
            mid = len(batch) // 2
            log.info("arXiv API refused a batch of %d (%s); splitting it to find the bad id", len(batch), exc)
            await self._batch(batch[:mid], found, not_found, invalid)
            await self._batch(batch[mid:], found, not_found, invalid)
            return
        by_id = {r.id: r for r in feed.records}
        for i in batch:
            if i in by_id:
                found[i] = by_id[i]
            else:
                not_found.add(i)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = exc.retry_after if isinstance(exc, _Transient) else 0.0
        return max(self._backoff(state), retry_after)

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "arXiv request failed (%s); retry %d of %d in %.1fs",
            exc,
            state.attempt_number,
            self.max_retries,
            wait,
        )

    async def _request(self, batch: Sequence[str]) -> AtomFeed:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_Transient),
            sleep=self._clock.sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            return await retrying(self._attempt, batch)
        except _Transient as exc:
            raise ArxivUnavailable(f"{exc} (after {self.max_retries + 1} attempt(s))") from exc

    def _count(self, outcome: str, started: float) -> None:
        if self._metrics is not None:
            self._metrics.arxiv_requests.labels(outcome=outcome).inc()
            self._metrics.arxiv_request_seconds.observe(max(0.0, self._clock.monotonic() - started))

    async def _attempt(self, batch: Sequence[str]) -> AtomFeed:
        await self.limiter.wait()
        params = {"id_list": ",".join(batch), "start": "0", "max_results": str(len(batch))}
        started = self._clock.monotonic()
        try:
            response = await self._http.get(self.base_url, params=params, timeout=self.timeout)
        except httpx.TimeoutException as exc:
            self._count("timeout", started)
            raise _Transient(f"timed out ({type(exc).__name__})") from exc
        except httpx.RequestError as exc:
            self._count("error", started)
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            self._count("error", started)
            raise _Transient(f"HTTP {status}", retry_after=_retry_after(response))
        if status == 400:
            self._count("bad_request", started)
            raise ArxivBadRequest(_error_message(response))
        if status != 200:
            self._count("error", started)
            raise ArxivUnavailable(f"HTTP {status} from {self.base_url}")
        try:
            # Bytes, not response.text: the XML declaration names the encoding, a guessed charset garbles it.
            feed = parse_feed(response.content)
        except ArxivAtomError as exc:
            self._count("error", started)
            raise _Transient(f"HTTP 200 with a body that is not Atom: {exc}") from exc
        if feed.errors and not feed.records:
            self._count("bad_request", started)
            raise ArxivBadRequest("; ".join(feed.errors))
        answered = {r.id for r in feed.records}
        self._count("ok" if all(i in answered for i in batch) else "not_found", started)
        return feed
