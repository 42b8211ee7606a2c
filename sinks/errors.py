"""The sinks family of errors."""

from processors.errors import PredigestError


class SinkError(PredigestError):
    """A sink could not write; the message says what the operator can do."""


class StateLockedError(SinkError):
    """Another process holds the DuckDB state file (DuckDB allows one writer per file)."""


class StateUnreadableError(SinkError):
    """DuckDB cannot open the state file (e.g. a WAL it fails to replay, duckdb#19712); rebuild it from Kafka."""
