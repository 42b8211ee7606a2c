"""The arXiv API enrichment's settings."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ArxivSettings(BaseModel):
    """The arXiv API enrichment: off by default; the cache lives in `state_dir/arxiv-cache.duckdb`."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = False
    base_url: str = "https://export.arxiv.org/api/query"
    min_interval_seconds: float = Field(3.0, ge=0)
    timeout_seconds: float = Field(20.0, gt=0)
    max_retries: int = Field(3, ge=0)
    backoff_seconds: float = Field(1.0, ge=0)
    batch_size: int = Field(50, ge=1, le=2000)
    negative_ttl_hours: float = Field(24.0, ge=0)
    # The cache's DuckDB (a file of its own, so limits of its own): a few thousand short rows, read by id.
    # DuckDB's defaults (80 % of the machine's RAM, a thread per core) were beside the state's 192 MiB budget.
    cache_memory_limit_mib: int = Field(32, ge=16, le=4096)
    cache_threads: int = Field(1, ge=1, le=64)

    @model_validator(mode="after")
    def _polite_to_arxiv(self) -> ArxivSettings:
        # arXiv's terms of use ask for one request per 3 s; only a local test server may go faster.
        host = (urlsplit(self.base_url).hostname or "").lower()
        if (host == "arxiv.org" or host.endswith(".arxiv.org")) and self.min_interval_seconds < 3.0:
            raise ValueError(f"arxiv.min_interval_seconds must be >= 3 for {host} (arXiv terms of use)")
        return self
