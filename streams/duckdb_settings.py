"""The settings of the worker's DuckDB state: what it may take of the worker's process."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    # ~1 GiB at a 10k window with 256 MiB of it DuckDB's (docker-compose.yml). It must be above memory_limit_mib.
    max_memory_limit_mib: int = Field(512, ge=64, le=1024 * 1024)
    # Threads of its queries; unset: DuckDB's default, one per core.
    threads: int | None = Field(None, ge=1, le=256)

    @model_validator(mode="after")
    def _room_to_raise(self) -> DuckDBSettings:
        # At or below the limit no pinch could be retried: a checkpoint of large notes, or the state's vacuum
        # (streams.state_vacuum, then never run), would stop the worker where one raise would have stored them.
        if self.memory_limit_mib >= self.max_memory_limit_mib:
            raise ValueError(
                f"duckdb.memory_limit_mib ({self.memory_limit_mib}) must be below duckdb.max_memory_limit_mib "
                f"({self.max_memory_limit_mib}): raise the maximum (PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB, within the "
                "worker's memory) or lower the limit"
            )
        return self
