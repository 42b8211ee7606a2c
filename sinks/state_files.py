"""Opening the worker's state file, and setting an unreadable or replaced one aside (never deleting it)."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from sinks.duck import set_aside
from sinks.errors import StateUnreadableError
from sinks.state import StateStore

log = logging.getLogger(__name__)


def open_state(path: Path, now: datetime) -> tuple[StateStore, Path | None]:
    """The worker's state; a damaged file (fails to open or to read back) is set aside and rebuilt from Kafka."""
    try:
        return StateStore(path), None
    except StateUnreadableError as exc:
        aside = set_aside(path, now, "unreadable")
        log.error("%s (set aside as %s)", exc, aside)
        return StateStore(path), aside
