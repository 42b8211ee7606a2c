"""Prometheus metrics of predigest, on an injected registry so tests see only their own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    """Every metric predigest exports; labels stay low-cardinality (axis, writer, kind, reason)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.documents_seen = Counter(
            "predigest_documents_seen_total", "Files the watcher saw change", ["kind"], registry=r
        )
        self.documents_published = Counter(
            "predigest_documents_published_total", "Files acknowledged by Kafka", ["kind"], registry=r
        )
        self.documents_stored = Counter(
            "predigest_documents_stored_total",
            "Document versions written to state",
            ["axis", "kind"],
            registry=r,
        )
        self.documents_rejected = Counter(
            "predigest_documents_rejected_total", "Files refused at the door", ["reason"], registry=r
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
        self.last_briefing = Gauge(
            "predigest_last_briefing_timestamp_seconds",
            "When the last briefing was written",
            ["axis"],
            registry=r,
        )
        self.window_documents = Gauge(
            "predigest_window_documents", "Documents in the last emitted window", ["axis"], registry=r
        )
        self.watcher_lag = Histogram(
            "predigest_watcher_lag_seconds",
            "File mtime to Kafka acknowledgement",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
            registry=r,
        )
        self.kafka_up = Gauge("predigest_kafka_up", "1 when the last Kafka call succeeded", registry=r)
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

    def render(self) -> bytes:
        return generate_latest(self.registry)
