"""The metrics registry: names, the build info, and series that exist before their first event."""

from __future__ import annotations

from importlib.metadata import version

from prometheus_client.parser import text_string_to_metric_families

from sinks.metrics import Metrics


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


def test_every_name_follows_the_conventions() -> None:
    families = list(text_string_to_metric_families(Metrics().render().decode()))
    assert len(families) >= 15
    for family in families:
        assert family.name.startswith("predigest_"), family.name
        assert family.documentation, family.name
        for bad in ("_milliseconds", "_minutes", "_hours", "_kilobytes", "_megabytes"):
            assert bad not in family.name, family.name
