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

from sinks.metrics import Metrics
from tests.deploy.tools import DEPLOY, ensure_promtool

PROM = DEPLOY / "prometheus"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "predigest.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
_NAME = re.compile(r"\bpredigest_[A-Za-z0-9_]+")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exposed_names() -> set[str]:
    """Every series name `Metrics()` can expose, labelled children or not."""
    names: set[str] = set()
    for family in Metrics().registry.collect():
        names.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",)))
    return names


def unknown_names(expr: str) -> set[str]:
    return set(_NAME.findall(expr)) - exposed_names()


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((PROM / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def dashboard_panels() -> Iterator[dict[str, Any]]:
    for panel in dashboard()["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in dashboard_panels() for t in p.get("targets", [])]


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


def test_the_dashboard_is_provisionable_and_every_panel_queries_existing_metrics() -> None:
    board = dashboard()
    assert board["uid"] == "predigest"
    datasource_uid = yaml.safe_load(DATASOURCES.read_text())["datasources"][0]["uid"]
    panels = [p for p in dashboard_panels() if p["type"] != "row"]
    assert len({p["id"] for p in dashboard_panels()}) == len(list(dashboard_panels()))
    for panel in panels:
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        assert panel["datasource"]["uid"] == datasource_uid, panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert not unknown_names(target["expr"]), (panel["title"], unknown_names(target["expr"]))
    for variable in board["templating"]["list"]:
        assert not unknown_names(variable["definition"]), variable["name"]


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
