"""The worker's polled gauges read from its state: window size, last briefings, the close schedule.

Consumer lag and Kafka reachability come from `streams.lag_probe`, shared with `/status` and `/readyz`."""

from __future__ import annotations

from datetime import datetime

from processors.window import due_closes, window_bounds
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.settings import Settings


def refresh_state_gauges(
    settings: Settings, state: StateStore, metrics: Metrics, now: datetime, owned: set[str] | None = None
) -> None:
    """Gauges read from this worker's state; they change with the clock, not only with events.

    With several workers, `owned` names this worker's axes: another axis's window reads 0 here, since
    this state may hold a stale copy of it, and dashboards take the max across workers.
    """
    window = window_bounds(now, settings.window_length)
    for axis in settings.axes:
        name = axis.name
        size = state.window_document_count(name, window) if owned is None or name in owned else 0
        metrics.window_documents.labels(axis=name).set(size)
        emitted = state.last_emitted_at(name)
        if emitted is not None:  # after a restart the gauge comes back from state, not from zero
            metrics.last_briefing.labels(axis=name).set(emitted.timestamp())
        closed = state.last_close_end(name)
        metrics.last_close_end.labels(axis=name).set(closed.timestamp() if closed else 0.0)
    if settings.close_enabled:
        due = due_closes(None, now, settings.close_at, settings.tz, settings.grace)
        if due:
            metrics.close_due.set(due[-1].timestamp())
