"""What the metrics tests share: the series the watcher exports."""

from __future__ import annotations

# The watcher's own series; with the ones every predigest process exports, all the watcher exports (sinks/metrics.py).
WATCHER_OWN = {
    "predigest_documents_seen",
    "predigest_documents_published",
    "predigest_watcher_lag_seconds",
    "predigest_watcher_loop_heartbeat_timestamp_seconds",
    "predigest_watcher_rescan_duration_seconds",
    "predigest_watcher_rescan_cpu_seconds",
    "predigest_watcher_files",
    "predigest_ledger_write_failures",
}
WATCHER_FAMILIES = WATCHER_OWN | {
    "predigest_build_info",
    "predigest_kafka_up",
    "predigest_ready",
    "predigest_documents_rejected",
}
