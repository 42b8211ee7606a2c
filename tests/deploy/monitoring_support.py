"""What the monitoring tests share: the alert rules and the Grafana dashboard's panels and queries, as loaded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from tests.deploy.tools import DEPLOY

PROM = DEPLOY / "prometheus"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "predigest.json"
# What in PromQL is not a series name: label matchers, ranges, strings, and the label lists of by/on/….
_NOT_NAMES = re.compile(
    r'\{[^}]*\}|\[[^\]]*\]|"[^"]*"|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)'
)
_IDENTIFIER = re.compile(r"\b[A-Za-z_:][A-Za-z0-9_:]*\b(?!\s*\()")  # a name not followed by "(": no function
# Keywords that a "(" need not follow (names followed by one, functions and by (…), on (…), are not matched).
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right"}


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((PROM / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression reads (`up` and `process_*` too, not only `predigest_*`)."""
    return set(_IDENTIFIER.findall(_NOT_NAMES.sub(" ", expr))) - _KEYWORDS


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def dashboard_panels() -> Iterator[dict[str, Any]]:
    for panel in dashboard()["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in dashboard_panels() for t in p.get("targets", [])]


def dashboard_variables() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard()["templating"]["list"]}


def dashboard_queries() -> list[str]:
    """The panels' queries as Grafana sends them with every variable at "All"."""
    names = sorted(dashboard_variables(), key=len, reverse=True)  # $instance before a shorter prefix
    queries = []
    for expr in dashboard_exprs():
        expr = expr.replace("$__rate_interval", "1m")
        for name in names:
            expr = expr.replace(f"${name}", ".*")
        queries.append(expr)
    return queries
