"""Opening the worker's state file: a damaged one is set aside (never deleted), one of another schema refused."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import duckdb

from sinks import duck, schema
from sinks.errors import RebuildRequiredError, StateMemoryError, StateUnreadableError
from sinks.file_claim import FileClaim
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
    a file of an older schema it migrates is migrated now, within `limits`, and a WAL replayed within them (raised
    up to the ceiling; StateMemoryError past it).

    So the worker stops with one line instead of retrying, and migrates before it joins its group: on its event
    loop (~40 s at 100k notes) it would miss Kafka's heartbeats, health checks and a stop. A damaged file is left
    to `open_state`.
    """
    if not path.exists():
        return
    # Before its WAL's replay or its migration: a worker holding the file refuses this start.
    claim = FileClaim(path, STATE)
    try:
        _check_version(path, limits)
    finally:
        claim.release()


def _check_version(path: Path, limits: duck.Limits) -> None:
    try:
        db = _replayed(path, limits)
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


# What the operator of a state whose WAL does not replay within the ceiling can do (docs/operations.md, "Memory").
REPLAY_ADVICE = (
    "for this start raise duckdb.max_memory_limit_mib and duckdb.memory_limit_mib (PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB, "
    "PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB) within the worker's memory, or run `predigest rebuild` (which sets the file "
    "and its WAL aside and replays Kafka); the file is not damaged"
)


def _replayed(path: Path, limits: duck.Limits) -> duckdb.DuckDBPyConnection:
    """The state opened within `limits`, its WAL (a stop that did not checkpoint) replayed and checkpointed; a WAL
    that does not replay within the memory limit is replayed at twice it, up to the ceiling (`Limits.raised`)."""
    wal = path.with_name(path.name + ".wal")
    if not wal.exists():
        return duck.connect(path, STATE, limits)
    # Said before the replay: a kernel's kill during it (the container's memory) leaves this as the last line. Not
    # why the WAL is there: a worker still running on the file has one too (its lock refuses this start next).
    log.info(
        "replaying the WAL of the state file %s (%d MiB not checkpointed yet) within %s",
        path,
        wal.stat().st_size >> 20,
        _within(limits),
    )
    while True:
        try:
            return _replay(path, limits)
        except StateMemoryError as exc:
            cause = exc.__cause__
            reason = (duck.out_of_memory(cause) if isinstance(cause, duckdb.Error) else None) or str(exc)
            if (raised := limits.raised()) is None:
                raise StateMemoryError(
                    f"the {STATE.what} {path} cannot replay its WAL within {_within(limits)} ({reason}); "
                    f"{REPLAY_ADVICE}"
                ) from exc
            log.warning(
                "the WAL of the state file %s did not replay within %s (%s): replaying it with %d MiB. Raise "
                "duckdb.memory_limit_mib to at least that",
                path,
                _within(limits),
                reason,
                raised,
            )
            limits = replace(limits, memory_mib=raised)


def _within(limits: duck.Limits) -> str:
    return "DuckDB's default memory" if limits.memory_mib is None else f"{limits.memory_mib} MiB"


def _replay(path: Path, limits: duck.Limits) -> duckdb.DuckDBPyConnection:
    db = duck.connect(path, STATE, limits)
    try:
        duck.checkpoint(db, path, STATE)  # at this limit: the worker's own open then has no WAL to replay
    except BaseException:
        db.close()
        raise
    return db


def set_aside_to_rebuild(path: Path, now: datetime, limits: duck.Limits = duck.NO_LIMITS) -> Path | None:
    """`predigest rebuild`'s first step: the file (and its WAL) set aside as `reason_to_replace` says, under its
    claim. Raises StateLockedError while a worker holds it: a rebuild under a running worker would be lost."""
    claim = FileClaim(path, STATE)
    try:
        return duck.set_aside(path, now, reason_to_replace(path, limits))
    finally:
        claim.release()  # the rebuild's state claims it again at its open, a moment later


def reason_to_replace(path: Path, limits: duck.Limits = duck.NO_LIMITS) -> str:
    """Why `predigest rebuild` sets the file aside: "unreadable" when damaged (logged), else "rebuild"."""
    if not path.exists():
        return "rebuild"
    try:
        # Checked, never migrated: a schema-6 file is set aside as it is (its migration would take ~40 s at 100k).
        duck.open_checked(path, STATE, schema.check, limits).close()
    except StateUnreadableError as exc:
        log.warning("%s", exc)
        return "unreadable"
    except StateMemoryError as exc:  # a WAL or notes past the limit: not damaged, and replaced all the same
        log.warning("%s", exc)
    except RebuildRequiredError:
        pass  # what the rebuild is for
    return "rebuild"
