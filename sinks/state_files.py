"""Opening the worker's state file, and setting an unreadable or replaced one aside (never deleting it)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from sinks.errors import StateUnreadableError
from sinks.state import StateStore

log = logging.getLogger(__name__)


def set_aside(path: Path, now: datetime, reason: str) -> Path | None:
    """Rename the state file and its WAL to `<name>.<reason>-<UTC stamp>`; the new name, or None if absent."""
    wal = path.with_name(path.name + ".wal")
    if not path.exists() and not wal.exists():
        return None
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.{reason}-{stamp}")
    if path.exists():
        path.rename(target)
    if wal.exists():
        wal.rename(target.with_name(target.name + ".wal"))
    return target


def open_state(path: Path, now: datetime) -> tuple[StateStore, Path | None]:
    """The worker's state; a file DuckDB cannot open is set aside and a fresh one is rebuilt from Kafka."""
    try:
        return StateStore(path), None
    except StateUnreadableError as exc:
        aside = set_aside(path, now, "unreadable")
        log.error(
            "state file %s cannot be opened (%s); set aside as %s, rebuilding from the retained topics",
            path,
            exc,
            aside,
        )
        return StateStore(path), aside
