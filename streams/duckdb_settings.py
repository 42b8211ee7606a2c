"""The settings of the worker's DuckDB state: what it may take of the worker's process."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DuckDBSettings(BaseModel):
    """What the worker's DuckDB state may take of its process (docs/configuration.md, docs/performance.md)."""

    model_config = ConfigDict(frozen=True)

    # DuckDB's buffer memory: past it, blocks already on disk are dropped and working data spills to
    # `<state file>.tmp`. DuckDB's own default is 80 % of the machine's RAM, which it takes while it
    # checkpoints (rewriting what was stored), so a worker grew with its state (2.3 GB at 100k notes). A
    # checkpoint holds 2 048 rows of the notes' text at once and fails past the limit: keep it well above that.
    # 192, not 256: DuckDB fills its limit with cached blocks as the state grows, and the worker's whole
    # resident set is budgeted at 512 MiB while ingesting 100k notes (docs/performance.md, issue 14).
    memory_limit_mib: int = Field(192, ge=64, le=1024 * 1024)
    # The most a checkpoint or write past memory_limit_mib may raise it to (doubling): past the container's
    # memory the kernel kills the worker before DuckDB refuses cleanly. 512: the 1.5 GiB worker container holds
    # ~1 GiB at a 10k window with up to 256 MiB of it DuckDB's (docker-compose.yml). Below memory_limit_mib: no raise.
    max_memory_limit_mib: int = Field(512, ge=64, le=1024 * 1024)
    # Threads of its queries; unset: DuckDB's default, one per core.
    threads: int | None = Field(None, ge=1, le=256)
