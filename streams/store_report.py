"""What storing a batch of documents records logs and counts: per note while they trickle in, per batch behind."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from processors.wire import DocumentRecord
from sinks.metrics import Metrics
from sinks.state import Position
from streams.logs import doc_context

log = logging.getLogger(__name__)

LOG_EACH_UP_TO = 20  # a batch of more notes logs one line, each document at DEBUG


@dataclass(frozen=True)
class StoredBatch:
    """A batch the state applied: its records, whether each is seen, and how it came."""

    items: Sequence[tuple[DocumentRecord, Position | None]]
    changed: Sequence[bool]  # per record, whether a briefing sees what it brought
    took: float  # seconds of the DuckDB transaction
    now: float  # when it was stored (epoch seconds), for the end-to-end lag
    replaying: bool = False  # a catch-up or a rebuild: no lag observed, no INFO line
    backlog: bool = False  # more records wait behind it: one INFO line, not one per document


def report(batch: StoredBatch, metrics: Metrics) -> None:
    """Count the stored versions and their lag; log each document, or the batch in one line."""
    # One line per document while they trickle in; a backlog or a replay after a takeover stores thousands
    # per second, so those lines are for debugging only (not even formatted unless DEBUG is on) and a batch
    # gets one line of its own. Counted in notes, not rows: a note is one row per axis.
    notes = len({record.header.path for record, _ in batch.items})
    quiet = batch.replaying or batch.backlog or notes > LOG_EACH_UP_TO
    each = logging.DEBUG if quiet else logging.INFO
    logged = log.isEnabledFor(each)
    stored = deleted = 0
    per_axis: Counter[tuple[str | None, str | None]] = Counter()  # counted once per label set, not per row
    lagged: set[tuple[str, str]] = set()  # one lag observation per note version, not per axis row
    for (record, position), done in zip(batch.items, batch.changed, strict=True):
        h = record.header
        if not done or h.type == "rejection":
            continue
        if h.type == "document":
            stored += 1
            per_axis[(h.axis, h.kind)] += 1
            if h.mtime is not None and not batch.replaying and (h.path, h.sha256) not in lagged:
                lagged.add((h.path, h.sha256))
                metrics.end_to_end_lag.observe(max(0.0, batch.now - h.mtime))
            if logged:
                log.log(
                    each, "stored %s for axis %s", h.path, h.axis, extra=doc_context(h.path, h.axis, position)
                )
        else:
            deleted += 1
            if logged:
                ctx = doc_context(h.path, h.axis, position)
                log.log(each, "deleted %s from axis %s", h.path, h.axis, extra=ctx)
    for (axis, kind), n in per_axis.items():
        metrics.documents_stored.labels(axis=axis, kind=kind).inc(n)
    if quiet and not batch.replaying:
        # A documents record is a row per note and axis it names, its first row numbered 0 (no position: one row, one record).
        records = sum(1 for _, position in batch.items if position is None or position.row == 0)
        log.info(
            "applied %d documents record(s) (%d axis rows) in %.0f ms: %d row(s) stored, %d deleted",
            records,
            len(batch.items),
            batch.took * 1000,
            stored,
            deleted,
        )
