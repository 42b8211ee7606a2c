"""What `GET /status` answers: per owned axis, the window, its documents and duplicates, its refused files, the
last briefing, lag.

The worker alone opens its DuckDB file (duckdb#17158), so `predigest status` asks the workers over HTTP;
each reports the axes it owns. Reads must not slow ingest (issue 16): the answer comes from a snapshot taken at
most every `status_refresh_seconds` (sooner when the worker's partitions change), its state reads in a thread on
a cursor of their own; the lag comes from the last reading of the probe that sets the lag gauges, so
`status` and Prometheus show the same numbers.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from processors.models import WindowBounds
from processors.window import next_close_fire, window_bounds
from sinks.clock import Clock
from sinks.rejections import AxisRefusals
from sinks.state_reader import StateReader
from streams.lag_probe import CONSUMED_STAGES, LagProbe, LagReading
from streams.ownership import Ownership
from streams.pipeline import Pipeline
from streams.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Taken:
    """One snapshot: the partitions it was taken for, when, and the body without its lag."""

    key: tuple[int, frozenset[int], frozenset[int]]
    at: datetime
    monotonic: float
    body: dict[str, Any]


def _duplicates(reader: StateReader, settings: Settings, axis: str, window: WindowBounds) -> dict[str, int]:
    # The same detection the briefing runs, out of the rows stored with each version.
    stored = reader.window(axis, window)
    try:
        found = stored.duplicates(settings.near_duplicate_threshold)
    finally:
        stored.close()
    kinds = Counter(d.kind for d in found.values())
    return {"exact": kinds["exact"], "near": kinds["near"]}


def _last_briefing(reader: StateReader, axis: str) -> dict[str, Any] | None:
    b = reader.emissions.latest(axis)
    if b is None:
        return None
    return {
        "window_end": b.window.end.isoformat(),
        "trigger": b.trigger,
        "generated_at": b.generated_at.isoformat(),
        "sources": len(b.sources),
        "increments": len(b.increments),
    }


def _refused(found: AxisRefusals) -> dict[str, Any]:
    """The axis's files refused by their latest record: how many, and the newest (its code, message, time)."""
    r = found.newest
    newest = (
        {"path": r.path, "reason_code": r.code, "reason": r.reason, "seen_at": r.seen_at.isoformat()}
        if r
        else None
    )
    return {"count": found.count, "newest": newest}


def _read_axes(
    reader: StateReader, settings: Settings, axes: Sequence[str], window: WindowBounds
) -> dict[str, dict[str, Any]]:
    """In a thread: what the state says of each axis (the cursor is closed after)."""
    with reader:
        refused = reader.counts.refusals(axes)  # every axis at once: one scan of the documents' paths
        return {
            axis: {
                "documents": reader.counts.window_document_count(axis, window),
                "duplicates": _duplicates(reader, settings, axis, window),
                "stored": reader.counts.axis_summary(axis),
                "last_briefing": _last_briefing(reader, axis),
                "refused": _refused(refused[axis]),
            }
            for axis in axes
        }


def lag_body(settings: Settings, reading: LagReading | None) -> dict[str, Any]:
    """The probe's reading as `/status` shows it: per topic and partition, and the parse (raw-topic) lag."""
    if reading is None or not reading.ok:
        error = reading.error if reading else "not probed yet"
        return {"ok": False, "checked_at": reading.at.isoformat() if reading else None, "error": error}
    topics = {stage: reading.of(settings.kafka.topic(stage)) for stage in CONSUMED_STAGES}
    return {
        "ok": True,
        "checked_at": reading.at.isoformat(),
        "parse": sum(topics["raw"].values()),  # raw records the group has not parsed yet
        **{stage: {str(p): n for p, n in lags.items()} for stage, lags in topics.items()},
    }


class StatusSnapshot:
    """`GET /status` for every caller from one snapshot; one is taken at a time, whoever asks."""

    def __init__(
        self,
        settings: Settings,
        pipeline: Callable[[], Pipeline],
        ownership: Ownership,
        lag: LagProbe,
        clock: Clock,
    ) -> None:
        self._settings = settings
        self._pipeline = pipeline
        self._ownership = ownership
        self._lag = lag
        self._clock = clock
        self._taken: _Taken | None = None
        self._running: asyncio.Task[_Taken] | None = None

    def _key(self) -> tuple[int, frozenset[int], frozenset[int]]:
        own = self._ownership
        return own.assignments, frozenset(own.owned_partitions), frozenset(own.catching_up())

    async def get(self) -> dict[str, Any]:
        """The JSON body: the snapshot, its age, and the lag of the probe's last reading."""
        taken = self._taken
        refresh = self._settings.status_refresh_seconds
        stale = taken is None or taken.key != self._key() or self._age(taken) > refresh
        if stale:
            if self._running is None or self._running.done():
                self._running = asyncio.create_task(self._take())
            # Shielded: a client that goes away does not cancel the snapshot the others wait for.
            return self._answer(await asyncio.shield(self._running))
        assert taken is not None  # not stale, so taken
        return self._answer(taken)

    def _age(self, taken: _Taken) -> float:
        return self._clock.monotonic() - taken.monotonic

    def _answer(self, taken: _Taken) -> dict[str, Any]:
        reading = self._lag.last
        lag = lag_body(self._settings, reading)
        axes = []
        for entry in taken.body["axes"]:
            p = str(entry["partition"])
            per_axis = (
                {"documents": lag["documents"].get(p, 0), "control": lag["control"].get(p, 0)}
                if lag["ok"]
                else None
            )
            axes.append({**entry, "lag": per_axis})
        snapshot = {
            "taken_at": taken.at.isoformat(),
            "age_seconds": round(self._age(taken), 3),
            "refresh_seconds": self._settings.status_refresh_seconds,
        }
        return {**taken.body, "axes": axes, "lag": lag, "snapshot": snapshot}

    async def _take(self) -> _Taken:
        s, own = self._settings, self._ownership
        await self._lag.get(max_age=s.status_refresh_seconds)
        # Everything about ownership is read at once, before the state is: one answer, one assignment.
        key, now = self._key(), self._clock.now()
        window = window_bounds(now, s.window_length)
        axes = own.owned_axes()
        body = {
            "worker": f"http://{s.web_host}:{s.web_port}",
            "app_id": s.app_id,
            "partitions": own.partitions,
            "owned_partitions": sorted(own.owned_partitions),
            "control_partitions": sorted(own.control_partitions),
            "catching_up": sorted(own.catching_up()),
            "axis_partitions": own.axis_map(),
            "next_close": (
                (next_close_fire(now, s.close_at, s.tz, s.grace) - s.grace).isoformat()
                if s.close_enabled
                else None
            ),
            "zone": s.zone,
        }
        read = await self._read(axes, window)
        body["axes"] = [
            {
                "axis": axis,
                "partition": own.partition_of(axis),
                "ready": own.is_ready(own.partition_of(axis)),
                "window": {"start": window.start.isoformat(), "end": window.end.isoformat()},
                **read[axis],
            }
            for axis in axes
        ]
        taken = _Taken(key, now, self._clock.monotonic(), body)
        self._taken = taken
        return taken

    async def _read(self, axes: Sequence[str], window: WindowBounds) -> dict[str, dict[str, Any]]:
        try:
            return await self._read_once(axes, window)
        except duckdb.Error as exc:  # the state was replaced under the cursor (state_guard): read the new one
            log.info("status read again: %s", exc)
            return await self._read_once(axes, window)

    async def _read_once(self, axes: Sequence[str], window: WindowBounds) -> dict[str, dict[str, Any]]:
        state = self._pipeline().state  # the reader opened in the thread: it waits for a batch's commit
        return await asyncio.to_thread(lambda: _read_axes(state.reader(), self._settings, axes, window))
