"""Prometheus metrics of predigest, on an injected registry so tests see only their own.

The worker (`Metrics`) and the watcher (`WatcherMetrics`) each export their own series, plus what every
predigest process exports (`_Common`: its version, Kafka reachability, refusals, readiness and `process_*`).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from processors.commands import COMMAND_REFUSALS
from processors.dead_letters import DEAD_LETTER_REASONS

# File mtime to Kafka or DuckDB: the quiet period alone costs a second; a startup scan of old files lands high.
LAG_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600, 86400)
WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
# Command to briefing written: a small window briefs in a second, 10k documents in a few, a catch-up in minutes.
BRIEFING_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
RESCAN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
TRIGGERS = ("close", "flush")
DUPLICATE_KINDS = ("exact", "near")
STATE_MEMORY_OPERATIONS = ("open", "check", "checkpoint", "write")
# The (stage, reason) pairs that can happen, at zero from the start so that an alert on increase() sees the first.
DEAD_LETTER_SERIES = {
    "raw": ("unreadable", "routing_failed"),
    "documents": ("unreadable",),
    "control": tuple(r for r in DEAD_LETTER_REASONS if r != "routing_failed"),
}


def _version() -> str:
    try:
        return version("predigest")
    except PackageNotFoundError:
        return "unknown"


class _Common:
    """What every predigest process exports: its version, Kafka, refusals at the door, readiness, `process_*`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)  # process_resident_memory_bytes, _cpu_seconds_total, _open_fds …
        self.build_info = Gauge(
            "predigest_build_info", "Always 1; the running version as a label", ["version"], registry=r
        )
        self.build_info.labels(version=_version()).set(1)
        self.kafka_up = Gauge("predigest_kafka_up", "1 when the last Kafka call succeeded", registry=r)
        self.ready = Gauge(
            "predigest_ready",
            "1 when the process's /readyz answered 200 the last time it was checked",
            registry=r,
        )
        self.documents_rejected = Counter(
            "predigest_documents_rejected_total", "Files refused at the door", ["reason"], registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class WatcherMetrics(_Common):
    """The watcher's series: files seen and published, its lag and the heartbeat of its loop."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry)
        r = self.registry
        self.documents_seen = Counter(
            "predigest_documents_seen_total",
            "Files the watcher read after they changed",
            ["kind", "writer"],
            registry=r,
        )
        self.documents_published = Counter(
            "predigest_documents_published_total",
            "Files acknowledged by Kafka",
            ["kind", "writer"],
            registry=r,
        )
        self.watcher_lag = Histogram(
            "predigest_watcher_lag_seconds",
            "File mtime to Kafka acknowledgement",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.watcher_heartbeat = Gauge(
            "predigest_watcher_loop_heartbeat_timestamp_seconds",
            "When the watcher's loop last made progress",
            registry=r,
        )
        self.watcher_rescan = Histogram(
            "predigest_watcher_rescan_duration_seconds",
            "Time a rescan took to list the root (in a thread beside the event path), by pass: changed folders, "
            "or full (every file statted)",
            ["pass"],
            buckets=RESCAN_BUCKETS,
            registry=r,
        )
        self.watcher_rescan_cpu = Counter(
            "predigest_watcher_rescan_cpu_seconds_total",
            "CPU time the rescans' listing took, by pass (changed folders, or full)",
            ["pass"],
            registry=r,
        )
        self.watcher_files = Gauge(
            "predigest_watcher_files", "Files under the watched folders at the last rescan", registry=r
        )
        self.ledger_write_failures = Counter(
            "predigest_ledger_write_failures_total",
            "Flushes of the watcher's ledger that DuckDB refused; their rows are kept and written by a later flush",
            registry=r,
        )


class Metrics(_Common):
    """The worker's series; labels stay low-cardinality (axis, writer, kind, reason)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry)
        r = self.registry
        self.documents_stored = Counter(
            "predigest_documents_stored_total",
            "Document versions written to state",
            ["axis", "kind"],
            registry=r,
        )
        self.documents_warned = Counter(
            "predigest_documents_warned_total",
            "Documents kept with a warning (decode fallback, bad front matter, no stamp, bad arXiv id, many ids)",
            ["reason"],
            registry=r,
        )
        self.duplicates = Counter(
            "predigest_duplicates_total",
            "Documents marked duplicate in a briefing",
            ["axis", "kind"],
            registry=r,
        )
        self.briefings_emitted = Counter(
            "predigest_briefings_emitted_total", "Briefings written", ["axis", "trigger"], registry=r
        )
        self.briefings_repeated = Counter(
            "predigest_briefing_commands_repeated_total",
            "Close/flush commands for a window already emitted",
            ["axis", "trigger"],
            registry=r,
        )
        self.briefings_split = Counter(
            "predigest_briefings_split_total",
            "Briefings over the Kafka message limit, sent to the briefings topic in parts (docs/briefing.md)",
            ["axis"],
            registry=r,
        )
        self.last_briefing = Gauge(
            "predigest_last_briefing_timestamp_seconds",
            "When the last briefing was written",
            ["axis"],
            registry=r,
        )
        self.window_documents = Gauge(
            "predigest_window_documents",
            "Documents in the sliding window ending now (what a flush would brief)",
            ["axis"],
            registry=r,
        )
        # --- operations (issue 5): lag, state writes, schedule, build ---
        self.end_to_end_lag = Histogram(
            "predigest_end_to_end_lag_seconds",
            "File mtime to the document's row in the worker's DuckDB state",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.duckdb_write = Histogram(
            "predigest_duckdb_write_duration_seconds",
            "Time of one write to the worker's DuckDB state: a batch of documents records, or an emission",
            ["operation"],
            buckets=WRITE_BUCKETS,
            registry=r,
        )
        self.consumer_lag = Gauge(
            "predigest_consumer_lag_messages",
            "End offset minus the worker group's committed offset, per partition",
            ["topic", "partition"],
            registry=r,
        )
        self.last_close_end = Gauge(
            "predigest_last_close_window_end_timestamp_seconds",
            "End of the last window closed by schedule (0: none yet)",
            ["axis"],
            registry=r,
        )
        self.close_due = Gauge(
            "predigest_close_due_timestamp_seconds",
            "End of the latest scheduled window whose close (end + grace) is due",
            registry=r,
        )
        self.briefing_duration = Histogram(
            "predigest_briefing_duration_seconds",
            "Close or flush command requested to the briefing's files written (briefings emitted here, once each)",
            ["axis", "trigger"],
            buckets=BRIEFING_BUCKETS,
            registry=r,
        )
        self.arxiv_requests = Counter(
            "predigest_arxiv_requests_total",
            "arXiv API requests by outcome (ok, not_found, bad_request, error, timeout)",
            ["outcome"],
            registry=r,
        )
        self.arxiv_cache_hits = Counter(
            "predigest_arxiv_cache_hits_total", "arXiv ids answered from the DuckDB cache", registry=r
        )
        self.arxiv_request_seconds = Histogram(
            "predigest_arxiv_request_seconds",
            "Duration of one arXiv API request",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30),
            registry=r,
        )

        # --- several workers (issue 5): ownership, catch-up and rebuilds of the state ---
        self.axis_owned = Gauge(
            "predigest_axis_owned",
            "1 when this worker owns the axis (its documents and control partition)",
            ["axis"],
            registry=r,
        )
        self.state_replayed = Counter(
            "predigest_state_replayed_records_total",
            "Records replayed from a retained topic into the state (takeover, fresh or rebuilt state); a briefing once",
            ["stage"],
            registry=r,
        )
        self.state_set_aside = Counter(
            "predigest_state_set_aside_total",
            "State files set aside by the worker: unreadable (DuckDB could not open it, e.g. its WAL)",
            ["reason"],
            registry=r,
        )
        self.state_memory_retries = Counter(
            "predigest_state_memory_retries_total",
            "State checkpoints and writes past DuckDB's memory limit, retried with twice the memory (the state "
            "reopened first when DuckDB invalidated it)",
            registry=r,
        )
        self.state_memory_refused = Counter(
            "predigest_state_memory_refused_total",
            "State operations DuckDB could not do within its memory limit (StateMemoryError; the file is kept): "
            "open (its start-up check), check (the periodic one), checkpoint and write (after their retries)",
            ["operation"],
            registry=r,
        )
        for operation in STATE_MEMORY_OPERATIONS:  # at zero: an alert on increase() sees the first one
            self.state_memory_refused.labels(operation=operation)
        self.records_unreadable = Counter(
            "predigest_records_unreadable_total",
            "Kafka records no part of predigest can read (damaged, or written by another version), skipped",
            ["stage"],
            registry=r,
        )
        self.stored_unreadable = Counter(
            "predigest_stored_notes_unreadable_total",
            "Reads of a stored note whose text does not read back (damaged): left out of the briefing (or page), "
            "listed in its rejected with code damaged",
            ["reader"],
            registry=r,
        )
        for reader in ("briefing", "browse"):  # at zero: an alert on increase() sees the first one
            self.stored_unreadable.labels(reader=reader)
        self.commands_ignored = Counter(
            "predigest_commands_ignored_total",
            "Close/flush commands not answered here: not_owned (partition moved) or misrouted (wrong partition)",
            ["reason"],
            registry=r,
        )
        self.commands_refused = Counter(
            "predigest_commands_refused_total",
            "Close/flush commands read from the control topic and refused (unknown axis, end out of reach …), "
            "then skipped",
            ["reason"],
            registry=r,
        )
        for reason in COMMAND_REFUSALS:  # at zero, so that an alert on increase() sees the first one
            self.commands_refused.labels(reason=reason)
        self.commands_failed = Counter(
            "predigest_commands_failed_total",
            "Close/flush commands whose answer (the briefing) failed every attempt: dead-lettered (briefing_failed), "
            "then skipped",
            ["axis", "trigger"],
            registry=r,
        )
        self.web_requests_refused = Counter(
            "predigest_web_requests_refused_total",
            "Web requests refused: cross_site, foreign_origin, not_a_script (no X-Predigest-Request), "
            "token (POSTs; reads too with web_read_token)",
            ["reason"],
            registry=r,
        )
        # At zero from the start: the set-aside happens at the first assignment, before any scrape, and an
        # alert on increase() must see the series go from 0 to 1.
        self.state_set_aside.labels(reason="unreadable")
        self.dead_letters = Counter(
            "predigest_dead_letters_total",
            "Records sent to the dead-letter topic: unreadable, routing_failed, or a refused command's reason",
            ["stage", "reason"],
            registry=r,
        )
        self.briefing_failures = Counter(
            "predigest_briefing_failures_total",
            "Attempts to write (or send) an axis's briefing that failed: no_space, permission, read_only, "
            "not_a_folder, os_error, send, error",
            ["axis", "reason"],
            registry=r,
        )
        self.briefing_failing = Gauge(
            "predigest_briefing_failing",
            "1 while an axis has briefings recorded that cannot be written (retried with back-off); sum: how many",
            ["axis"],
            registry=r,
        )
        for stage, codes in DEAD_LETTER_SERIES.items():
            for code in codes:
                self.dead_letters.labels(stage=stage, reason=code)

    def declare_axes(self, axes: Iterable[str]) -> None:
        """Create the per-axis series at zero, so that rate() and the alerts see them before the first event."""
        for axis in axes:
            for trigger in TRIGGERS:
                self.briefings_emitted.labels(axis=axis, trigger=trigger)
                self.briefing_duration.labels(axis=axis, trigger=trigger)
                self.commands_failed.labels(axis=axis, trigger=trigger)
            for kind in DUPLICATE_KINDS:
                self.duplicates.labels(axis=axis, kind=kind)
            self.window_documents.labels(axis=axis)
            self.axis_owned.labels(axis=axis)
            self.briefing_failing.labels(axis=axis)
