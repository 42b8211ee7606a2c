"""arXiv metadata for the ids of a window: the cache first, then the API for the misses."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import duckdb

from processors.arxiv_atom import EnrichedId
from processors.arxiv_ids import is_valid_arxiv_id, strip_version
from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient
from sinks.metrics import Metrics

__all__ = ["EnrichedId", "Enricher"]

log = logging.getLogger(__name__)


class Enricher:
    """`enrich` never raises for a missing API or a broken cache: those ids just stay unverified."""

    def __init__(self, cache: ArxivCache, client: ArxivClient | None, metrics: Metrics) -> None:
        self.cache = cache
        self.client = client  # None: the API is off, only what the cache already holds is used
        self.metrics = metrics

    async def enrich(self, ids: Iterable[str]) -> dict[str, EnrichedId]:
        """Per id (without version) the record and its source; ids with neither are absent."""
        wanted = [i for i in dict.fromkeys(strip_version(i) for i in ids) if is_valid_arxiv_id(i)]
        if not wanted:
            return {}
        try:
            cached = self.cache.get_many(wanted)
            misses = [i for i in wanted if i not in cached]
            skip = self.cache.known_missing(misses)
        except duckdb.Error:
            log.exception("arXiv cache unreadable; asking the API for every id")
            cached, misses, skip = {}, wanted, set()
        if cached:
            self.metrics.arxiv_cache_hits.inc(len(cached))
        result = {i: EnrichedId(record=r, source="cache") for i, r in cached.items()}
        ask = [i for i in misses if i not in skip]
        if skip:
            log.info("%d id(s) skipped: arXiv recently said it has no such paper", len(skip))
        if self.client is None or not ask:
            return result
        lookup = await self.client.lookup(ask)
        try:
            self.cache.put_many(lookup.found.values())
            self.cache.put_missing(lookup.not_found | lookup.invalid)
        except duckdb.Error:
            log.exception("arXiv cache not written; the next window asks the API again")
        result.update({i: EnrichedId(record=r, source="arxiv_api") for i, r in lookup.found.items()})
        return result

    async def aclose(self) -> None:
        """Close the API client's connections and the cache file (the worker is stopping)."""
        if self.client is not None:
            await self.client.aclose()
        self.cache.close()
