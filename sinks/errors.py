"""The sinks family of errors: a write that failed, and a DuckDB file that cannot be used (locked, its folder
unusable, damaged, or of another schema)."""

from processors.errors import PredigestError


class SinkError(PredigestError):
    """A sink could not write; the message says what the operator can do."""


class LedgerWriteError(SinkError):
    """The watcher's ledger could not write its acknowledgements: kept in memory for its next flush, or at a stop
    left to the next start, which sends those files again."""


class DuckFileError(SinkError):
    """A DuckDB file of predigest (state, ledger, arXiv cache) cannot be used; the subclass says why."""


class StateLockedError(DuckFileError):
    """Another process holds the DuckDB file (DuckDB allows one writer per file)."""


class StateLocationError(DuckFileError):
    """The file's folder is missing and cannot be made, or cannot be written: the file itself is not at fault."""


class StateUnreadableError(DuckFileError):
    """The file is damaged or not DuckDB (a WAL DuckDB fails to replay, duckdb#19712; a truncated file)."""


class RebuildRequiredError(DuckFileError):
    """The state file was written by another schema version; `predigest rebuild` replaces it from Kafka."""


class StateMigrationError(DuckFileError):
    """A state of an older schema failed to migrate (sinks.schema): it is kept as it was, not taken for damaged."""


class StateMemoryError(DuckFileError):
    """DuckDB could not read or checkpoint the file within its memory limit: its notes are too large for it."""


class StateBusyError(DuckFileError):
    """The state must be reopened (a checkpoint out of memory) and reads still hold it: the write is retried."""
