"""Opening the worker's state file: a damaged one is set aside (never deleted), one of another schema refused."""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime
from pathlib import Path

import duckdb

from sinks import duck, schema
from sinks.errors import RebuildRequiredError, StateUnreadableError
from sinks.metrics import Metrics
from sinks.state import STATE, StateStore

log = logging.getLogger(__name__)


def open_state(
    path: Path, now: datetime, limits: duck.Limits = duck.NO_LIMITS, metrics: Metrics | None = None
) -> tuple[StateStore, Path | None]:
    """The worker's state; a damaged file (fails to open or to read back) is set aside and rebuilt from Kafka.

    A file of another schema raises RebuildRequiredError: the operator runs `predigest rebuild`.
    """
    try:
        return StateStore(path, limits, metrics), None
    except StateUnreadableError as exc:
        aside = duck.set_aside(path, now, "unreadable")
        log.error("%s (set aside as %s)", exc, aside)
        return StateStore(path, limits, metrics), aside


def replace_state(
    old: StateStore,
    path: Path,
    now: datetime,
    limits: duck.Limits = duck.NO_LIMITS,
    metrics: Metrics | None = None,
) -> tuple[StateStore, Path | None]:
    """A state found damaged while running: closed (its cursors with it), its file set aside, a fresh one opened.

    Every connection to the old file must be closed first: DuckDB hands a new connection to a path it still
    has open the old database, renamed file or not.
    """
    with contextlib.suppress(duckdb.Error):
        old.close()
    aside = duck.set_aside(path, now, "unreadable")
    return StateStore(path, limits, metrics), aside


def check_version(path: Path, limits: duck.Limits = duck.NO_LIMITS) -> None:
    """Before the worker starts: RebuildRequiredError for a file of another schema, StateLockedError for a held one;
    a file of an older schema it migrates is migrated now, within `limits`.

    So the worker stops with one line instead of retrying, and migrates before it joins its group: on its event
    loop (~40 s at 100k notes) it would miss Kafka's heartbeats, health checks and a stop. A damaged file is left
    to `open_state`.
    """
    if not path.exists():
        return
    try:
        db = duck.connect(path, STATE)
    except StateUnreadableError:
        return
    try:
        older = schema.migrates(db, path)
    except duckdb.Error:
        return
    finally:
        db.close()
    if older:
        with contextlib.suppress(StateUnreadableError):
            duck.open_checked(path, STATE, schema.ensure, limits).close()


def reason_to_replace(path: Path) -> str:
    """Why `predigest rebuild` sets the file aside: "unreadable" when damaged (logged), else "rebuild".

    Raises StateLockedError while a worker holds the file: a rebuild under a running worker would be lost.
    """
    if not path.exists():
        return "rebuild"
    try:
        # Checked, never migrated: a schema-6 file is set aside as it is (its migration would take ~40 s at 100k).
        duck.open_checked(path, STATE, schema.check).close()
    except StateUnreadableError as exc:
        log.warning("%s", exc)
        return "unreadable"
    except RebuildRequiredError:
        pass  # what the rebuild is for
    return "rebuild"
