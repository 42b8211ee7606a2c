"""docker-compose.yml against the Compose Specification, with compose-go (the loader of Docker Compose v2)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.tools import DEPLOY, PROJECT, ensure_compose_check

COMPOSE = PROJECT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose_check() -> Path:
    return ensure_compose_check()


def check(
    tool: Path, path: Path, *args: str, token: str | None = "t0ken"
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    if token is not None:
        env["PREDIGEST_TOKEN"] = token
    return subprocess.run(
        [str(tool), *args, str(path)], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def project(compose_check: Path) -> dict[str, Any]:
    result = check(compose_check, COMPOSE, "-json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_stack_is_a_valid_compose_project(compose_check: Path) -> None:
    result = check(compose_check, COMPOSE)
    assert result.returncode == 0, result.stderr
    assert "valid compose project" in result.stdout


def test_the_stack_runs_kafka_watcher_two_workers_prometheus_and_grafana(project: dict[str, Any]) -> None:
    services = project["services"]
    assert set(services) == {"kafka", "watcher", "worker-1", "worker-2", "prometheus", "grafana"}
    for name, svc in services.items():
        assert svc.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
        for port in svc.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", f"{name} publishes {port} beyond the loopback"
    assert services["kafka"]["image"] == "apache/kafka:4.1.1"


def _volume(svc: dict[str, Any], target: str) -> str:
    return next(str(v["source"]) for v in svc["volumes"] if v["target"] == target)


def test_each_worker_has_its_own_state_and_port_and_they_share_the_briefings(project: dict[str, Any]) -> None:
    w1, w2 = project["services"]["worker-1"], project["services"]["worker-2"]
    assert _volume(w1, "/data/state") != _volume(w2, "/data/state")
    assert _volume(w1, "/data/out") == _volume(w2, "/data/out") == "briefings"
    ports = []
    for w in (w1, w2):
        port = int(w["environment"]["PREDIGEST_WEB_PORT"])
        assert [p["target"] for p in w["ports"]] == [port]
        assert f"127.0.0.1:{port}/healthz" in " ".join(w["healthcheck"]["test"])
        assert w["environment"]["PREDIGEST_TOKEN"] == "t0ken"
        ports.append(port)
    assert len(set(ports)) == 2
    # The volumes must be named ones, or state would vanish with the container.
    assert {_volume(w1, "/data/state"), _volume(w2, "/data/state")} <= set(project["volumes"])


def test_the_watcher_is_unhealthy_when_its_loop_stalls(project: dict[str, Any]) -> None:
    watcher = project["services"]["watcher"]
    port = int(watcher["environment"]["PREDIGEST_WATCHER_METRICS_PORT"])
    # /healthz answers 503 once the loop made no progress for watcher_stall_seconds; /metrics would still answer.
    assert f"127.0.0.1:{port}/healthz" in " ".join(watcher["healthcheck"]["test"])


def test_prometheus_and_grafana_mount_the_projects_configuration(project: dict[str, Any]) -> None:
    prom, graf = project["services"]["prometheus"], project["services"]["grafana"]
    assert Path(_volume(prom, "/etc/prometheus")) == DEPLOY / "prometheus"
    assert Path(_volume(graf, "/etc/grafana/provisioning")) == DEPLOY / "grafana" / "provisioning"
    assert Path(_volume(graf, "/etc/grafana/dashboards")) == DEPLOY / "grafana" / "dashboards"
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/predigest.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/etc/grafana/dashboards"


def test_every_scrape_target_is_a_service_listening_on_that_port(project: dict[str, Any]) -> None:
    services = project["services"]
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {
        t
        for job in config["scrape_configs"]
        if job["job_name"].startswith("predigest-")
        for sc in job["static_configs"]
        for t in sc["targets"]
    }
    assert len(targets) == 3
    for target in targets:
        host, port = target.rsplit(":", 1)
        env = services[host]["environment"]
        assert port in (env.get("PREDIGEST_WEB_PORT"), env.get("PREDIGEST_WATCHER_METRICS_PORT")), target


BROKEN = {
    "an unknown service key": (
        '    command: ["watch"]\n',
        '    command: ["watch"]\n    helthcheck: {}\n',
        "helthcheck",
    ),
    "a dependency on a service that does not exist": (
        "    depends_on:\n      prometheus:",
        "    depends_on:\n      prom:",
        "undefined service",
    ),
    "a port that is not a number": ('"127.0.0.1:9090:9090"', '"127.0.0.1:9090:prom"', "containerPort: prom"),
    "a healthcheck with a malformed interval": ("interval: 10s", "interval: ten seconds", "ten seconds"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_compose_file_is_refused(compose_check: Path, tmp_path: Path, case: str) -> None:
    old, new, message = BROKEN[case]
    text = COMPOSE.read_text(encoding="utf-8")
    assert old in text, f"the mutation for {case!r} no longer applies"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = check(compose_check, broken)
    assert result.returncode != 0, f"{case} was accepted"
    assert message in result.stderr, result.stderr


def test_the_stack_refuses_to_start_without_a_token(compose_check: Path) -> None:
    result = check(compose_check, COMPOSE, token=None)
    assert result.returncode != 0
    assert "set PREDIGEST_TOKEN" in result.stderr
