"""The one configuration model: a TOML file plus PREDIGEST_* environment overrides."""

from __future__ import annotations

import difflib
import os
from datetime import time, timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

from processors.briefing_rules import BriefingRules
from processors.commands import CommandLimits
from processors.models import AxisSpec
from processors.window import MAX_CATCH_UP
from streams import config_load
from streams.arxiv_settings import ArxivSettings
from streams.briefing_settings import DEFAULT_AXES
from streams.duckdb_settings import DuckDBSettings
from streams.errors import ConfigError
from streams.kafka_settings import KAFKA_MESSAGE_BYTES, MAX_FILE_BYTES, DeadLetterSettings, KafkaSettings

# The groups live in modules of their own; importing them from here keeps working.
__all__ = [
    "DEFAULT_AXES",
    "KAFKA_MESSAGE_BYTES",
    "MAX_FILE_BYTES",
    "ArxivSettings",
    "DeadLetterSettings",
    "DuckDBSettings",
    "KafkaSettings",
    "Settings",
    "load_settings",
]


class Settings(BaseSettings):
    """All of predigest's configuration; frozen once loaded."""

    model_config = SettingsConfigDict(
        env_prefix="PREDIGEST_",
        env_nested_delimiter="__",
        frozen=True,
        extra="forbid",
        hide_input_in_errors=True,  # a bad value must not echo the token or the SASL password into a log
    )
    toml_file: ClassVar[Path | None] = None

    root: Path = Path("examples/root")
    zone: str = "Asia/Shanghai"
    window_hours: float = 24.0
    close_at: time = time(22, 20)
    close_enabled: bool = True
    # How often the leader compares the close schedule with what was emitted.
    close_check_seconds: float = Field(30.0, gt=0)
    grace_seconds: float = 300.0
    # How far from now a command's window end may lie; anything else is refused (at the door, and by the worker
    # if it reaches the control topic anyway). The past covers the close's catch-up of MAX_CATCH_UP days.
    flush_max_past_days: float = Field(366.0, ge=MAX_CATCH_UP + 1, le=36_600)
    flush_max_future_hours: float = Field(24.0, ge=0, le=24 * 366)
    axes: tuple[AxisSpec, ...] = DEFAULT_AXES
    increment_min: int = 3
    increment_max: int = 8
    near_duplicate_threshold: float = Field(0.8, gt=0.0, le=1.0)  # Jaccard on shingles, see docs/briefing.md
    lang: Literal["zh", "en"] = "zh"
    rules: BriefingRules = Field(default_factory=BriefingRules)  # relevance, increments, credibility
    max_bytes: int = Field(4 * 1024 * 1024, gt=0, le=MAX_FILE_BYTES)  # larger files travel without bytes
    quiet_seconds: float = 1.0
    rescan_seconds: float = 60.0
    # Most rescans list only the folders whose mtime changed; every this-many-th one stats every file, for edits in
    # place whose events were dropped (1 on a network file system, where folder mtimes may lag).
    full_rescan_every: int = Field(10, ge=1)
    # The watcher's /healthz fails when its loop made no progress for this long (a stuck read, a hung send).
    watcher_stall_seconds: float = Field(120.0, gt=0)
    # The worker's agents take up to batch_records records (window: notes), or what came within batch_seconds.
    batch_records: int = Field(500, ge=1, le=10_000)
    batch_seconds: float = Field(0.05, gt=0, le=5)
    # Processes that parse notes beside the worker's event loop (about one per core); 0 parses in the loop.
    parse_processes: int = Field(2, ge=0, le=32)
    # How many steps nicer than the worker its parse processes run: on a busy box the worker's store, the serial
    # stage, is served first, so it keeps pace instead of finishing long after the parsing (docs/performance.md).
    parse_nice: int = Field(10, ge=0, le=19)

    app_id: str = "predigest"
    state_dir: Path = Path(".cache/state")
    out_dir: Path = Path("out")
    # An axis whose briefing files cannot be written is tried again after this long, doubling up to the maximum.
    briefing_retry_seconds: float = Field(5.0, gt=0)
    briefing_retry_max_seconds: float = Field(300.0, gt=0)
    kafka_cache: Path = Path(".cache/kafka")
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    dead_letters: DeadLetterSettings = Field(default_factory=DeadLetterSettings)
    duckdb: DuckDBSettings = Field(default_factory=DuckDBSettings)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_json: bool = False  # one JSON object per log line, with path and axis fields on document lines

    web_host: str = "127.0.0.1"
    web_port: int = 6066
    watcher_metrics_port: int = 6067
    metrics_interval_seconds: float = 15.0  # how often polled gauges (lag, window size) are refreshed
    # How often the worker reads its state file through (size and every block, in a thread); one that fails is
    # set aside and rebuilt from Kafka while the worker runs. About 0.3 s of a core per 40 MB of state.
    state_check_seconds: float = Field(60.0, gt=0)
    token: SecretStr | None = None  # the bearer token of POST routes; required when web_host is not loopback
    # Or a file holding it (a compose or Kubernetes secret: /run/secrets/…), read once at load; never dumped.
    token_file: Path | None = Field(None, exclude=True)
    web_allow_no_token: bool = False  # accept a non-loopback web_host without a token (logged as a WARNING)
    # GET /status, /briefings/… and the briefing browser need the bearer token too (health, readiness and
    # /metrics stay open for probes and Prometheus).
    web_read_token: bool = False
    # /status and the briefing browser answer from a snapshot at most this old (issue 16: reads cannot slow ingest).
    status_refresh_seconds: float = Field(5.0, gt=0)
    web_origins: tuple[
        str, ...
    ] = ()  # origins besides the worker's own allowed to POST (e.g. a proxy's https://…)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls.toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=cls.toml_file))
        return tuple(sources)

    @field_validator("zone")
    @classmethod
    def _known_zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            close = difflib.get_close_matches(zone, sorted(available_timezones()), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(
                f"{zone!r} is no IANA time zone{hint}: use a name such as Asia/Shanghai, Europe/Berlin or UTC"
            ) from None
        return zone

    @model_validator(mode="before")
    @classmethod
    def _token_from_file(cls, data: Any) -> Any:
        # PREDIGEST_TOKEN_FILE keeps the token out of the environment (and `docker inspect`).
        if not isinstance(data, dict) or data.get("token_file") is None:
            return data
        if data.get("token") is not None:
            raise ValueError(
                "token and token_file are both set: keep one (PREDIGEST_TOKEN or PREDIGEST_TOKEN_FILE)"
            )
        path = Path(data["token_file"])
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ValueError(
                f"token_file {path} cannot be read ({reason}): point it at the token's file"
            ) from None
        if not token:
            raise ValueError(f"token_file {path} is empty: write the token into it")
        return {**data, "token": token}

    @model_validator(mode="after")
    def _retention_covers_the_window(self) -> Settings:
        # A rebuild replays the retained documents: they must cover the window, its grace and a margin.
        if self.kafka.retention_hours * 3_600_000 < self.retention_floor_ms:
            raise ValueError(
                f"kafka.retention_hours={self.kafka.retention_hours} is shorter than window + grace + "
                f"margin ({self.retention_floor_ms / 3_600_000:.1f} h): a rebuild would miss documents"
            )
        return self

    @model_validator(mode="after")
    def _token_is_a_secret(self) -> Settings:
        # An empty token would accept `Authorization: Bearer` with nothing after it.
        if self.token is not None and not self.token.get_secret_value().strip():
            raise ValueError("token is empty: set PREDIGEST_TOKEN to a secret, or leave it unset")
        if self.web_read_token and self.token is None:
            raise ValueError(
                "web_read_token is set but no token is: set PREDIGEST_TOKEN (or PREDIGEST_TOKEN_FILE)"
            )
        return self

    @property
    def retention_floor_ms(self) -> int:
        """Window + grace + a margin of one more window (at least a day): a worker down for a day still rebuilds."""
        margin = max(self.window_length, timedelta(days=1))
        return int((self.window_length + self.grace + margin).total_seconds() * 1000)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    @property
    def window_length(self) -> timedelta:
        return timedelta(hours=self.window_hours)

    @property
    def grace(self) -> timedelta:
        return timedelta(seconds=self.grace_seconds)

    @property
    def briefing_rules(self) -> BriefingRules:
        """`rules` with the increment range and the near-duplicate threshold set at the top level."""
        increments = self.rules.increments.model_copy(
            update={"min_count": self.increment_min, "max_count": self.increment_max}
        )
        return self.rules.model_copy(
            update={"increments": increments, "near_duplicate_threshold": self.near_duplicate_threshold}
        )

    @property
    def state_file(self) -> Path:
        return self.state_dir / "worker.duckdb"

    @property
    def ledger_file(self) -> Path:
        return self.state_dir / "watcher-ledger.duckdb"

    @property
    def arxiv_cache_file(self) -> Path:
        return self.state_dir / "arxiv-cache.duckdb"

    @property
    def dead_letter_stop_file(self) -> Path:
        """Written when a stage stopped the worker on its dead-letter limit; `predigest dead resume` removes it."""
        return self.state_dir / "dead-letter-stop.json"

    @property
    def command_limits(self) -> CommandLimits:
        """What a close or flush command may ask for (processors.commands)."""
        return CommandLimits(
            axes=tuple(a.name for a in self.axes),
            window=self.window_length,
            zone=self.tz,
            max_past=timedelta(days=self.flush_max_past_days),
            max_future=timedelta(hours=self.flush_max_future_hours),
        )

    def axis(self, name: str) -> AxisSpec | None:
        return next((a for a in self.axes if a.name == name), None)

    def require_axis(self, name: str) -> AxisSpec:
        """The configured axis `name`, or an error that lists the configured ones."""
        spec = self.axis(name)
        if spec is None:
            names = ", ".join(a.name for a in self.axes)
            raise ConfigError(
                f"axis {name!r} is not configured (configured: {names}); check --axis or [[axes]]"
            )
        return spec


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Load settings: explicit overrides, then PREDIGEST_* env, then the TOML file.

    ConfigError, in one line naming the file and line or the variable, for whatever is wrong: a file that is
    missing or not TOML, a key or variable that is no setting (with the closest one), a value refused.
    """
    environ = dict(os.environ)  # the one place that reads the environment (pydantic-settings reads it too)
    data = config_load.read_toml(config_file) if config_file is not None else {}
    config_load.refuse_unknown(Settings, environ, config_file, data)
    Settings.toml_file = config_file
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(config_load.describe(exc, environ, config_file, data)) from None
    except SettingsError as exc:  # a variable holding a table (PREDIGEST_KAFKA='{…}') that is not JSON
        raise ConfigError(
            f"configuration error: {exc}: give it as JSON, or set its keys one by one"
        ) from None
    finally:
        Settings.toml_file = None
