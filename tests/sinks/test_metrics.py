"""The metrics registry: names, the build info, and series that exist before their first event."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from sinks.metrics import Metrics, WatcherMetrics
from tests.sinks.metrics_support import WATCHER_FAMILIES, WATCHER_OWN


def test_build_info_carries_the_installed_version() -> None:
    m = Metrics()
    assert m.registry.get_sample_value("predigest_build_info", {"version": version("predigest")}) == 1


def test_declared_axes_have_zero_series_so_rates_and_alerts_see_them() -> None:
    m = Metrics()
    m.declare_axes(["inference", "risk"])
    for axis in ("inference", "risk"):
        for trigger in ("close", "flush"):
            labels = {"axis": axis, "trigger": trigger}
            assert m.registry.get_sample_value("predigest_briefings_emitted_total", labels) == 0
        assert m.registry.get_sample_value("predigest_duplicates_total", {"axis": axis, "kind": "near"}) == 0


def _families(metrics: Metrics | WatcherMetrics) -> list[Any]:
    return list(text_string_to_metric_families(metrics.render().decode()))


def test_every_name_follows_the_conventions() -> None:
    families = _families(Metrics()) + _families(WatcherMetrics())
    assert len(families) >= 15
    for family in families:
        assert family.name.startswith(("predigest_", "process_")), family.name
        assert family.documentation, family.name
        for bad in ("_milliseconds", "_minutes", "_hours", "_kilobytes", "_megabytes"):
            assert bad not in family.name, family.name


def test_both_processes_export_their_process_series_and_the_watcher_only_its_own() -> None:
    worker = {f.name for f in _families(Metrics())}
    watcher = {f.name for f in _families(WatcherMetrics())}
    for names in (worker, watcher):
        # RSS and CPU of the process (prometheus_client's ProcessCollector), so memory can be watched.
        assert {"process_resident_memory_bytes", "process_cpu_seconds", "process_open_fds"} <= names
        assert {"predigest_build_info", "predigest_kafka_up", "predigest_ready"} <= names
    assert {n.removesuffix("_created") for n in watcher if n.startswith("predigest_")} == WATCHER_FAMILIES
    assert not WATCHER_OWN & worker
    assert "predigest_briefing_duration_seconds" in worker


def test_the_briefing_duration_exists_per_axis_and_trigger_before_the_first_briefing() -> None:
    m = Metrics()
    m.declare_axes(["inference"])
    for trigger in ("close", "flush"):
        labels = {"axis": "inference", "trigger": trigger}
        assert m.registry.get_sample_value("predigest_briefing_duration_seconds_count", labels) == 0
