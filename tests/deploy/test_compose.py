"""docker-compose.yml against the Compose Specification, with compose-go (the loader of Docker Compose v2)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from sinks.files import BriefingFiles
from streams import stopping
from streams.duckdb_settings import DuckDBSettings
from streams.settings import load_settings
from tests.deploy.tools import DEPLOY, PROJECT, ensure_compose_check

COMPOSE = PROJECT / "docker-compose.yml"
ENV_EXAMPLE = PROJECT / ".env.example"
BENCH = json.loads((PROJECT / "bench" / "results.json").read_text(encoding="utf-8"))
PREDIGEST_SERVICES = ("watcher", "worker-1", "worker-2")
WORKERS = ("worker-1", "worker-2")
MIB = 1024 * 1024
_READS = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


@pytest.fixture(scope="module")
def compose_check() -> Path:
    return ensure_compose_check()


def check(
    tool: Path, path: Path, *args: str, env_file: Path = ENV_EXAMPLE, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The validator as an operator runs compose: with an env file (never a stray .env beside the file)."""
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        **(env or {}),
    }
    return subprocess.run(
        [str(tool), *args, "-env-file", str(env_file), str(path)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def resolved(tool: Path, **env: str) -> dict[str, Any]:
    result = check(tool, COMPOSE, "-json", env=env)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


@pytest.fixture(scope="module")
def project(compose_check: Path) -> dict[str, Any]:
    return resolved(compose_check)


def test_the_stack_with_the_example_env_is_a_valid_compose_project(compose_check: Path) -> None:
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


def _volume(svc: dict[str, Any], target: str) -> dict[str, Any]:
    found: dict[str, Any] = next(v for v in svc["volumes"] if v["target"] == target)
    return found


def test_each_worker_has_its_own_state_and_port(project: dict[str, Any]) -> None:
    w1, w2 = (project["services"][w] for w in WORKERS)
    states = {_volume(w, "/data/state")["source"] for w in (w1, w2)}
    assert len(states) == 2
    # The volumes must be named ones, or state would vanish with the container.
    assert states <= set(project["volumes"])
    ports = []
    for w in (w1, w2):
        port = int(w["environment"]["PREDIGEST_WEB_PORT"])
        assert [p["target"] for p in w["ports"]] == [port]
        # Ready, not merely alive: Kafka answers, the state is caught up and sound (a 503 fails urlopen).
        assert f"127.0.0.1:{port}/readyz" in " ".join(w["healthcheck"]["test"])
        ports.append(port)
    assert len(set(ports)) == 2


def test_briefings_land_in_one_host_folder_that_compose_never_creates(compose_check: Path) -> None:
    for env, folder in (
        ({}, PROJECT / "briefings"),
        ({"PREDIGEST_BRIEFINGS": "/srv/briefings"}, "/srv/briefings"),
    ):
        services = resolved(compose_check, **env)["services"]
        for name in WORKERS:
            out = _volume(services[name], "/data/out")
            assert out["type"] == "bind", f"{name}: briefings in a volume the host cannot read"
            assert Path(out["source"]) == Path(folder), name
            # A folder docker created would be root's, and the workers (uid 10001) could not write into it.
            assert out["bind"]["create_host_path"] is False, name
            assert not out.get("read_only"), name


def test_a_briefing_file_is_readable_by_the_hosts_users(tmp_path: Path) -> None:
    written = BriefingFiles(tmp_path).ensure(
        "inference", "2026-09-27-close", '{"axis": "inference"}', "# E1\n"
    )
    assert written
    for path in written:
        assert path.stat().st_mode & 0o004, f"{path.name} is mode {path.stat().st_mode & 0o777:o}"


def test_the_watcher_is_unhealthy_when_its_loop_stalls(project: dict[str, Any]) -> None:
    watcher = project["services"]["watcher"]
    port = int(watcher["environment"]["PREDIGEST_WATCHER_METRICS_PORT"])
    # /readyz answers 503 once the loop made no progress for watcher_stall_seconds (as /healthz does) and while
    # Kafka is unreachable; /metrics would still answer.
    assert f"127.0.0.1:{port}/readyz" in " ".join(watcher["healthcheck"]["test"])


def test_prometheus_and_grafana_mount_the_projects_configuration(project: dict[str, Any]) -> None:
    prom, graf = project["services"]["prometheus"], project["services"]["grafana"]
    assert Path(_volume(prom, "/etc/prometheus")["source"]) == DEPLOY / "prometheus"
    assert Path(_volume(graf, "/etc/grafana/provisioning")["source"]) == DEPLOY / "grafana" / "provisioning"
    assert Path(_volume(graf, "/etc/grafana/dashboards")["source"]) == DEPLOY / "grafana" / "dashboards"
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


# --- secrets -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["PREDIGEST_TOKEN_FILE", "GRAFANA_ADMIN_PASSWORD_FILE"])
def test_the_stack_refuses_to_start_without_either_secret(
    compose_check: Path, tmp_path: Path, missing: str
) -> None:
    env_file = tmp_path / ".env"
    kept = [
        line for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines() if not line.startswith(missing)
    ]
    env_file.write_text("\n".join(kept) + "\n", encoding="utf-8")
    result = check(compose_check, COMPOSE, env_file=env_file)
    assert result.returncode != 0, f"the stack started without {missing}"
    assert (
        f"required variable {missing} is missing a value: set {missing} to the file holding" in result.stderr
    )


def test_a_copy_of_the_compose_file_alone_is_refused(compose_check: Path, tmp_path: Path) -> None:
    copy = tmp_path / "docker-compose.yml"
    copy.write_text(COMPOSE.read_text(encoding="utf-8"), encoding="utf-8")
    empty = tmp_path / "empty.env"
    empty.write_text("", encoding="utf-8")
    result = check(compose_check, copy, env_file=empty)
    assert result.returncode != 0
    assert "set PREDIGEST_TOKEN_FILE" in result.stderr and "set GRAFANA_ADMIN_PASSWORD_FILE" in result.stderr


def test_the_token_and_the_grafana_password_reach_the_containers_only_as_files(compose_check: Path) -> None:
    project = resolved(compose_check, PREDIGEST_TOKEN_FILE="/etc/predigest/token")
    secrets, services = project["secrets"], project["services"]
    assert secrets["predigest_token"]["file"] == "/etc/predigest/token"
    assert Path(secrets["grafana_admin_password"]["file"]) == PROJECT / "secrets" / "grafana_admin_password"
    for name in WORKERS:
        (mount,) = services[name]["secrets"]
        assert mount["source"] == "predigest_token"
        assert services[name]["environment"]["PREDIGEST_TOKEN_FILE"] == mount["target"]
    (mount,) = services["grafana"]["secrets"]
    assert mount["source"] == "grafana_admin_password"
    assert services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD__FILE"] == mount["target"]
    assert not services["watcher"].get("secrets"), "the watcher serves no POST route: it needs no token"
    for name, svc in services.items():
        for key in svc.get("environment") or {}:
            if re.search(r"TOKEN|PASSWORD|SECRET", key):
                assert key.endswith("_FILE"), f"{name} gets {key} in its environment, not from a secret file"


def test_the_workers_environment_is_a_configuration_they_accept(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    token = tmp_path / "predigest_token"
    token.write_text("t0ken\n", encoding="utf-8")
    for name in PREDIGEST_SERVICES:
        with monkeypatch.context() as m:
            for key, value in project["services"][name]["environment"].items():
                m.setenv(key, str(token) if key == "PREDIGEST_TOKEN_FILE" else value)
            m.setenv("PREDIGEST_WEB_HOST", "0.0.0.0")  # the image's ENV
            m.setenv("PREDIGEST_ROOT", str(tmp_path))  # /notes is the container's mount
            settings = load_settings()
        assert settings.log_json, f"{name} logs text: the operator's log shipper expects JSON"
        assert settings.kafka.bootstrap == "kafka:9092"
        if name in WORKERS:
            assert settings.token is not None and settings.token.get_secret_value() == "t0ken"


# --- logs and memory -----------------------------------------------------------------------------------------


def test_every_service_rotates_its_log(project: dict[str, Any]) -> None:
    for name, svc in project["services"].items():
        logging = svc.get("logging") or {}
        assert logging.get("driver") in ("json-file", "local"), name
        options = logging.get("options") or {}
        assert re.fullmatch(r"\d+[kmg]", options.get("max-size", "")), f"{name}'s log grows without bound"
        assert int(options.get("max-file", "0")) >= 2, name


def _limit_mib(svc: dict[str, Any]) -> float:
    memory = ((svc.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory")
    assert memory, "no memory limit"
    return int(memory) / MIB


def test_every_service_has_a_memory_limit(project: dict[str, Any]) -> None:
    for name, svc in project["services"].items():
        assert _limit_mib(svc) >= 256, name


def test_the_predigest_limits_leave_headroom_over_the_benchmarks_peaks(project: dict[str, Any]) -> None:
    services = project["services"]
    # The default is sized for windows up to 10k documents; operations.md says what a larger one needs (below).
    runs = [r for n, r in BENCH["runs"].items() if int(n) <= 10_000]
    # A worker's container holds the worker and its parse processes.
    worker_peak = max(r["worker_rss_mib"] + r["parse_processes_rss_mib"] for r in runs)
    watcher_peak = max(
        BENCH["latency_ms"]["watcher_rss_mib"], *(r["backfill_rss_mib"] for r in runs)
    )  # its start-up scan publishes like `backfill`
    for name in WORKERS:
        assert _limit_mib(services[name]) >= 1.5 * worker_peak, (name, worker_peak)
    assert _limit_mib(services["watcher"]) >= 1.5 * watcher_peak, watcher_peak
    heap = re.search(r"-Xmx(\d+)m", services["kafka"]["environment"]["KAFKA_HEAP_OPTS"])
    assert heap and _limit_mib(services["kafka"]) >= 1.5 * int(heap.group(1))


def test_docker_waits_for_a_workers_and_the_watchers_own_stop_before_killing_them(
    project: dict[str, Any],
) -> None:
    for name in WORKERS:
        given = re.fullmatch(r"(\d+)s", project["services"][name]["stop_grace_period"])
        assert given, name
        grace = int(given.group(1))
        assert grace > stopping.WORKER_STOP_SECONDS, (name, grace)
    watcher = re.fullmatch(r"(\d+)s", project["services"]["watcher"]["stop_grace_period"])
    assert watcher and int(watcher.group(1)) > stopping.STOP_GRACE_SECONDS


def test_the_workers_duckdb_memory_raise_stays_within_their_container(project: dict[str, Any]) -> None:
    """A checkpoint of large notes raises DuckDB's memory up to its ceiling: past the container's limit the kernel
    kills the worker before DuckDB refuses cleanly, naming the setting to raise."""
    runs = [r for n, r in BENCH["runs"].items() if int(n) <= 10_000]
    # The benchmarks' peaks hold DuckDB's default limit already; the raise adds what is above it.
    worker_peak = max(r["worker_rss_mib"] + r["parse_processes_rss_mib"] for r in runs)
    default = DuckDBSettings().memory_limit_mib
    for name in WORKERS:
        svc = project["services"][name]
        ceiling = int(svc["environment"]["PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB"])
        assert default < ceiling, "no room to raise DuckDB's memory past a checkpoint of large notes"
        assert _limit_mib(svc) >= worker_peak + ceiling - default, (name, worker_peak, ceiling)


def test_the_memory_the_docs_give_for_a_100k_window_leaves_headroom_over_its_peak() -> None:
    operations = (PROJECT / "docs" / "operations.md").read_text(encoding="utf-8")
    advised = re.search(r"100k documents[^`]*`PREDIGEST_WORKER_MEMORY=(\d+)g`", operations)
    assert advised, "operations.md: say what PREDIGEST_WORKER_MEMORY a 100k-document window needs"
    large = [r for n, r in BENCH["runs"].items() if int(n) > 10_000]
    for run in large:
        peak = run["worker_rss_mib"] + run["parse_processes_rss_mib"]
        assert int(advised.group(1)) * 1024 >= 1.5 * peak, peak


def test_the_worker_memory_limit_is_the_operators_to_raise(compose_check: Path) -> None:
    services = resolved(compose_check, PREDIGEST_WORKER_MEMORY="3g", PREDIGEST_DUCKDB_MAX_MEMORY_MIB="2048")[
        "services"
    ]
    assert [_limit_mib(services[w]) for w in WORKERS] == [3072, 3072]
    assert {services[w]["environment"]["PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB"] for w in WORKERS} == {"2048"}


# --- .env.example --------------------------------------------------------------------------------------------


def test_the_example_env_sets_every_variable_the_compose_file_reads_and_says_what_it_is() -> None:
    read = set(_READS.findall(COMPOSE.read_text(encoding="utf-8")))
    lines = ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
    keys = {line.split("=", 1)[0]: i for i, line in enumerate(lines) if line and not line.startswith("#")}
    assert set(keys) == read
    for key, i in keys.items():
        assert lines[i - 1].startswith("# "), f"{key} has no comment above it"


# --- broken copies -------------------------------------------------------------------------------------------

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
    "a secret that is not declared": (
        "      - grafana_admin_password\n",
        "      - grafana_password\n",
        "undefined secret grafana_password",
    ),
    "a memory limit that is not a size": (
        "memory: 512m",
        "memory: half a gig",
        "deploy.resources.limits.memory' strconv.ParseFloat",
    ),
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
