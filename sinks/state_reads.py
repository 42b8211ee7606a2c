"""The worker state's reads, each answered by the sink that holds it (the facade's other half: sinks/state.py)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Concatenate, ParamSpec, TypeVar

import duckdb

from processors.models import Briefing, Document, Rejection, Trigger, WindowBounds
from sinks import vacuum
from sinks.counts import Counts
from sinks.documents import Documents
from sinks.emissions import EmissionRecord, Emissions
from sinks.metrics import Metrics
from sinks.offsets import AppliedOffsets
from sinks.unreadable import Unreadable

P = ParamSpec("P")
T = TypeVar("T")


class Serialised:
    """Holds the lock that lets one user at a time on the state's connection."""

    # The window agent's transaction runs in a thread while the event loop's users (a briefing's reads, the
    # outbox, the gauges, a catch-up) call in: DuckDB serves one statement at a time per connection, and a
    # transaction must not take in another's statements. Reentrant: a write holds it through its retries.
    _lock: threading.RLock

    @contextmanager
    def unchanged(self) -> Iterator[None]:
        """No write commits inside the block (the lock held): the reads in it see the state at one moment."""
        with self._lock:
            yield


S = TypeVar("S", bound=Serialised)


def serialised(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Run `method` holding the state's lock (a write in progress elsewhere finishes first)."""

    @functools.wraps(method)
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    return run


class StateReads(Serialised):
    """Reads of the state's sinks, which StateStore opens (and opens again after a reopen); one at a time."""

    _db: duckdb.DuckDBPyConnection
    offsets: AppliedOffsets
    docs: Documents
    emissions: Emissions
    counts: Counts
    _metrics: Metrics | None

    def unreadable(self, reader: str = "briefing") -> Unreadable:
        """Where one briefing's (or page's) reads report the stored notes they cannot read (counted)."""
        return Unreadable(self._metrics, reader)

    @serialised
    def excess_row_groups(self) -> int:
        """The most row groups a table holds beyond what its rows need (what a vacuum would merge)."""
        return vacuum.excess_row_groups(self._db)

    @serialised
    def applied_offset(self, topic: str, partition: int) -> int | None:
        return self.offsets.get(topic, partition)

    @serialised
    def latest_baseline(
        self, axis: str, before: datetime, since: datetime, unreadable: Unreadable | None = None
    ) -> Document | None:
        return self.docs.latest_baseline(axis, before, since, unreadable)

    @serialised
    def living_document(self, axis: str) -> Document | None:
        return self.docs.living_document(axis)

    @serialised
    def living_documents(
        self, axes: Sequence[str], unreadable: Unreadable | None = None
    ) -> dict[str, Document | None]:
        return self.docs.living_documents(axes, unreadable)

    @serialised
    def rejections(self, window: WindowBounds, axis: str) -> list[Rejection]:
        return self.docs.rejections(window, axis)

    @serialised
    def emission(self, axis: str, window_end: datetime, trigger: str) -> Briefing | None:
        return self.emissions.briefing(axis, window_end, trigger)

    @serialised
    def emission_record(self, axis: str, window_end: datetime, trigger: str) -> EmissionRecord | None:
        return self.emissions.record_of(axis, window_end, trigger)

    @serialised
    def undelivered_emissions(self) -> list[tuple[str, datetime, Trigger]]:
        return self.emissions.undelivered()

    @serialised
    def earlier_briefings(self, axis: str, before: datetime) -> list[Briefing]:
        return self.emissions.earlier(axis, before)

    @serialised
    def latest_emission(self, axis: str) -> Briefing | None:
        return self.emissions.latest(axis)

    @serialised
    def last_close_end(self, axis: str) -> datetime | None:
        return self.emissions.last_close_end(axis)

    @serialised
    def last_emitted_at(self, axis: str) -> datetime | None:
        return self.emissions.last_emitted_at(axis)

    @serialised
    def document_count(self, axis: str | None = None) -> int:
        return self.counts.document_count(axis)

    @serialised
    def window_document_count(self, axis: str, window: WindowBounds) -> int:
        return self.counts.window_document_count(axis, window)

    @serialised
    def axis_summary(self, axis: str) -> dict[str, int]:
        return self.counts.axis_summary(axis)
