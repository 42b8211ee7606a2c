"""Prometheus config, alert rules and the Grafana dashboard: valid, and only about metrics that exist."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sinks.metrics import Metrics, WatcherMetrics
from tests.deploy.monitoring_support import (
    PROM,
    alert_rules,
    dashboard,
    dashboard_exprs,
    dashboard_panels,
    dashboard_queries,
    dashboard_variables,
    metric_names,
)
from tests.deploy.tools import DEPLOY, ensure_promtool

DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
_NAME = re.compile(r"\bpredigest_[A-Za-z0-9_]+")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exposed_names() -> set[str]:
    """Every series name the worker's or the watcher's metrics can expose, labelled children or not."""
    names: set[str] = set()
    for metrics in (Metrics(), WatcherMetrics()):
        for family in metrics.registry.collect():
            names.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",)))
    return names


def unknown_names(expr: str) -> set[str]:
    return set(_NAME.findall(expr)) - exposed_names()


@pytest.fixture(scope="module")
def promtool() -> str:
    return ensure_promtool()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False, cwd=PROM)


def test_promtool_accepts_the_scrape_config(promtool: str) -> None:
    result = _run(promtool, "check", "config", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


def test_promtool_accepts_the_alert_rules(promtool: str) -> None:
    result = _run(promtool, "check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_the_alerts_fire_when_they_should_and_not_otherwise(promtool: str) -> None:
    result = _run(promtool, "test", "rules", "alerts.test.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_refuses_a_broken_rule(promtool: str, tmp_path: Path) -> None:
    broken = tmp_path / "alerts.yml"
    broken.write_text((PROM / "alerts.yml").read_text().replace("max by (axis)", "max by axis", 1))
    result = _run(promtool, "check", "rules", str(broken))
    assert result.returncode != 0


def test_the_alerts_an_operator_expects_exist_with_severity_and_summary() -> None:
    rules = {r["alert"]: r for r in alert_rules()}
    assert {
        "PredigestBriefingMissedAtClose",
        "PredigestWatcherDown",
        "PredigestConsumerLagGrowing",
        "PredigestRejectionsSpiking",
        "PredigestKafkaUnreachable",
    } <= set(rules)
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"], name


def test_every_metric_an_alert_uses_exists() -> None:
    for rule in alert_rules():
        assert _NAME.search(rule["expr"]) or "up{" in rule["expr"], rule["alert"]
        assert not unknown_names(rule["expr"]), (rule["alert"], unknown_names(rule["expr"]))


def test_a_renamed_metric_is_caught() -> None:
    assert unknown_names("rate(predigest_briefings_emitted_total[5m])") == set()
    assert unknown_names("rate(predigest_briefing_emitted_total[5m])") == {"predigest_briefing_emitted_total"}
    assert unknown_names("predigest_watcher_lag_seconds_bucket") == set()
    assert unknown_names("predigest_kafka_up_total") == {"predigest_kafka_up_total"}


def _datasource_refs(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        if isinstance(node.get("datasource"), dict):
            yield node["datasource"].get("uid")
        for value in node.values():
            yield from _datasource_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _datasource_refs(value)


def test_every_panel_queries_existing_metrics() -> None:
    board = dashboard()
    assert board["uid"] == "predigest"
    panels = [p for p in dashboard_panels() if p["type"] != "row"]
    assert len({p["id"] for p in dashboard_panels()}) == len(list(dashboard_panels()))
    for panel in panels:
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert not unknown_names(target["expr"]), (panel["title"], unknown_names(target["expr"]))
    for variable in dashboard_variables().values():
        assert not unknown_names(variable.get("definition", "")), variable["name"]
    assert not [q for q in dashboard_queries() if "$" in q], "a query uses a variable the dashboard lacks"


def test_the_dashboard_is_importable_with_a_prometheus_input_and_names_no_data_source_uid() -> None:
    board = dashboard()
    (source,) = board["__inputs"]
    assert (source["name"], source["type"], source["pluginId"]) == (
        "DS_PROMETHEUS",
        "datasource",
        "prometheus",
    )
    assert board["id"] is None
    # Every panel, query and variable goes through the `datasource` variable, never a fixed uid.
    refs = list(_datasource_refs(board))
    assert refs and set(refs) == {"${datasource}"}
    variable = dashboard_variables()["datasource"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    # Import (Dashboards > Import) replaces ${DS_PROMETHEUS} everywhere with the data source chosen.
    imported = json.loads(json.dumps(board).replace("${DS_PROMETHEUS}", "P1809F7CD0C75ACF3"))
    assert {v["name"]: v for v in imported["templating"]["list"]}["datasource"]["current"]["value"] == (
        "P1809F7CD0C75ACF3"
    )
    assert "${DS_" not in json.dumps(imported)


def test_the_provisioned_dashboard_picks_the_provisioned_data_source() -> None:
    # Provisioning replaces no input: the variable's value matches no uid, and Grafana then picks the option
    # whose name is the variable's text (scenes' MultiValueVariable, findOptionMatchingCurrent).
    (provisioned,) = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    current = dashboard_variables()["datasource"]["current"]
    assert current == {"selected": False, "text": provisioned["name"], "value": "${DS_PROMETHEUS}"}
    assert provisioned["type"] == "prometheus" and provisioned["isDefault"]


def test_the_dashboard_narrows_to_a_job_and_an_instance() -> None:
    variables = dashboard_variables()
    job, instance = variables["job"], variables["instance"]
    for variable in (job, instance):
        assert variable["type"] == "query" and variable["multi"] and variable["includeAll"], variable["name"]
        assert _NAME.search(variable["definition"]), variable["name"]
        # "All" is the values found (a regex of them), not `.*`, so Prometheus's own job stays out of `up`.
        assert "allValue" not in variable, variable["name"]
    assert job["definition"] == "label_values(predigest_build_info, job)"
    assert '{job=~"$job"}' in instance["definition"], "instances of the jobs chosen"
    names = list(variables)
    assert names.index("datasource") < names.index("job") < names.index("instance")
    for panel in dashboard_panels():
        for target in panel.get("targets", []):
            selectors = re.findall(r"\b(?:predigest_[A-Za-z0-9_]+|up)(\{[^}]*\})?", target["expr"])
            assert selectors, target["expr"]
            for labels in selectors:
                assert 'job=~"$job"' in labels, (panel["title"], target["expr"])
                # An axis with no owner is one that no worker owns: that query looks at every instance.
                if target.get("legendFormat") != "{{axis}}: no owner":
                    assert 'instance=~"$instance"' in labels, (panel["title"], target["expr"])


def test_the_dashboard_shows_what_the_operations_issue_asks_for() -> None:
    exprs = "\n".join(dashboard_exprs())
    for name in (
        "predigest_documents_published_total",
        "predigest_watcher_lag_seconds_bucket",
        "predigest_end_to_end_lag_seconds_bucket",
        "predigest_consumer_lag_messages",
        "predigest_window_documents",
        "predigest_documents_rejected_total",
        "predigest_briefings_emitted_total",
        "predigest_last_briefing_timestamp_seconds",
    ):
        assert name in exprs, name
    assert "by (writer, kind)" in exprs


def _overlap(a: dict[str, int], b: dict[str, int]) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def test_the_watcher_ledger_s_refused_writes_have_a_panel_beside_the_duckdb_writes() -> None:
    # Before: predigest_ledger_write_failures_total reached an alert (PredigestLedgerWriteFailing) and no panel.
    panels = list(dashboard_panels())
    (ledger,) = [
        p
        for p in panels
        if any("predigest_ledger_write_failures_total" in t["expr"] for t in p.get("targets", []))
    ]
    (duckdb_writes,) = [p for p in panels if p["title"].startswith("DuckDB write latency")]
    assert ledger["gridPos"]["y"] == duckdb_writes["gridPos"]["y"]
    assert "PredigestLedgerWriteFailing" in ledger["description"]
    assert not [p["title"] for p in panels if p is not ledger and _overlap(p["gridPos"], ledger["gridPos"])]


def _alerts_by_metric() -> dict[str, set[str]]:
    watched: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            watched.setdefault(name, set()).add(rule["alert"])
    return watched


def test_metric_names_are_read_from_promql_as_prometheus_reads_them() -> None:
    expr = (
        'sum by (instance) (increase(predigest_state_memory_retries_total{job=~"$job"}[1h])) > 0\n'
        "or sum by (instance) (predigest_x_total and on (job, instance) (time() - process_start_time_seconds < 60))"
    )
    assert metric_names(expr) == {
        "predigest_state_memory_retries_total",
        "predigest_x_total",
        "process_start_time_seconds",
    }
    assert metric_names('up{job="predigest-watcher"} == 0') == {"up"}


def test_every_metric_an_alert_watches_has_a_panel() -> None:
    # Before: the watcher's heartbeat, stored notes unreadable, the state's memory retries and refusals,
    # briefings failing and process start times reached alerts and no panel.
    watched = _alerts_by_metric()
    assert {"up", "predigest_watcher_loop_heartbeat_timestamp_seconds", "predigest_ready"} <= set(watched)
    shown = {
        name for p in dashboard_panels() for t in p.get("targets", []) for name in metric_names(t["expr"])
    }
    assert {name: sorted(alerts) for name, alerts in watched.items() if name not in shown} == {}


def test_each_alert_is_named_beside_its_metric_and_no_panel_hides_another() -> None:
    # An operator paged by an alert finds its panel by its name, with what to do in the description.
    panels = [p for p in dashboard_panels() if p["type"] != "row"]
    for rule in alert_rules():
        # The start time only tells whether a process started within the window: the panel is the counter's.
        watched = metric_names(rule["expr"]) - {"process_start_time_seconds"}
        showing = [p for p in panels if any(watched & metric_names(t["expr"]) for t in p["targets"])]
        assert [p for p in showing if rule["alert"] in p["description"]], rule["alert"]
    everything = list(dashboard_panels())
    for i, a in enumerate(everything):
        for b in everything[i + 1 :]:
            assert not _overlap(a["gridPos"], b["gridPos"]), (a["title"], b["title"])
