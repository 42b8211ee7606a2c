"""The Kafka side of the settings: the broker, its topics and security, and the dead-letter topic."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from processors.wire_frames import MAX_RECORD_BYTES

# The topics and producers allow the largest documents record (24 MiB), and a file may be at most 8 MiB.
KAFKA_MESSAGE_BYTES = MAX_RECORD_BYTES
MAX_FILE_BYTES = 8 * 1024 * 1024


class KafkaSettings(BaseModel):
    """Where Kafka is and how to talk to it; no bootstrap means the embedded local broker."""

    # A validation error would otherwise print the input, the SASL password with it.
    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    bootstrap: str | None = None  # host:port[,host:port…]
    topic_prefix: str = "predigest"
    partitions: int = Field(1, ge=1)
    record_bytes: int = Field(384 * 1024, gt=0, le=1 << 20)  # notes packed per documents record (v5)
    replication_factor: int = 1
    # raw, documents and control: a rebuild replays documents, so they must outlive window + grace + margin.
    retention_hours: float = 24 * 7
    # briefings: "already emitted", D numbers and ids cited earlier are rebuilt from them; -1 keeps them all.
    briefings_retention_hours: float = -1
    # How long a worker that died without leaving keeps its partitions before the group moves them on.
    session_timeout_seconds: float = Field(60.0, ge=6.0, le=300.0)
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None  # from PREDIGEST_KAFKA__SASL_PASSWORD; never logged
    ssl_cafile: Path | None = None  # CA bundle that signed the brokers' certificates
    ssl_certfile: Path | None = None  # client certificate (mutual TLS)
    ssl_keyfile: Path | None = None  # its private key

    def topic(self, stage: str) -> str:
        return f"{self.topic_prefix}.{stage}"

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @model_validator(mode="after")
    def _consistent_security(self) -> KafkaSettings:
        # A half-configured SASL would silently connect without it, or fail with a cryptic handshake error.
        if self.uses_sasl and not (self.sasl_mechanism and self.sasl_username and self.sasl_password):
            raise ValueError(
                f"kafka.security_protocol {self.security_protocol} needs kafka.sasl_mechanism, "
                "kafka.sasl_username and kafka.sasl_password (PREDIGEST_KAFKA__SASL_PASSWORD)"
            )
        if not self.uses_sasl and self.sasl_mechanism:
            raise ValueError(
                f"kafka.sasl_mechanism is set but kafka.security_protocol is {self.security_protocol}; "
                "use SASL_SSL (or SASL_PLAINTEXT on a trusted network)"
            )
        if not self.uses_tls and (self.ssl_cafile or self.ssl_certfile or self.ssl_keyfile):
            raise ValueError(
                f"kafka.ssl_* files are set but kafka.security_protocol is {self.security_protocol}; "
                "use SSL or SASL_SSL"
            )
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("kafka.ssl_certfile and kafka.ssl_keyfile go together (mutual TLS)")
        return self


class DeadLetterSettings(BaseModel):
    """The dead-letter topic (`<prefix>.dead`) and when a stage stops instead of dead-lettering (docs/guarantees.md)."""

    model_config = ConfigDict(frozen=True)

    # After this many failed records in a row have been dead-lettered, the next stops the worker (0: no limit).
    max_consecutive: int = Field(20, ge=0)
    # Or when more than this share of the last `share_window` records of a stage failed (1.0: no limit).
    max_share: float = Field(0.5, gt=0.0, le=1.0)
    share_window: int = Field(200, ge=10, le=100_000)
    # How long the dead-letter topic keeps a record: time to notice, fix and replay.
    retention_hours: float = Field(24 * 30, gt=0)
