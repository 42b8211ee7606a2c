"""The real /metrics endpoints of a worker and a watcher, linted by promtool and scraped by a real Prometheus."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from processors.wire import MAGIC
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from streams.worker_process import free_port
from tests.deploy.monitoring_support import alert_rules, dashboard_queries
from tests.deploy.tools import DEPLOY, ensure_promtool
from tests.sinks.metrics_support import WATCHER_FAMILIES
from tests.support import running_worker, wait_for, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NOTES = {
    "inbox/jay/kv-cache-note.md": "# vLLM 推理笔记\n\nKV cache serving: arXiv:2609.23130 hit rate 92%.\n",
    "inbox/tom/spec-decoding.md": "# Speculative decoding\n\nvLLM inference serving, arXiv:2607.20468.\n",
}
BINARY = "inbox/jay/broken.md"
HEADER = b'{"type":"document","path":"inbox/x.md","sha256":"s","seen_at":"2026-09-27T00:00:00Z","axis":"inference",'
UNREADABLE = [  # on the documents topic: damaged, and a summary with a field no version of ours knows
    b"garbage",
    MAGIC + b"\n" + HEADER + b'"kind":"note","event_time":"2026-09-27T00:00:00Z"}\n{"from_the_future":1}\n{}',
]


async def send_unreadable(s: Settings) -> None:
    producer = kafka_io.make_producer(s)
    await producer.start()
    try:
        for value in UNREADABLE:
            await producer.send_and_wait(s.kafka.topic("documents"), value, key=b"inference")
    finally:
        await producer.stop()


def families(body: str) -> set[str]:
    """The predigest metric families of an exposition (`_created` series folded into their family)."""
    return {
        f.name.removesuffix("_created")
        for f in text_string_to_metric_families(body)
        if f.name.startswith("predigest_")
    }


def sample(body: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


async def scrape(url: str) -> str:
    """The exposition text, or "" while the endpoint is not up yet."""
    try:
        async with httpx.AsyncClient(timeout=5) as http:
            response = await http.get(url)
    except httpx.HTTPError:
        return ""
    return response.text if response.status_code == 200 else ""


async def get_json(url: str, **params: str) -> Any:
    async with httpx.AsyncClient(timeout=5) as http:
        response = await http.get(url, params=params)
    return response.json()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.3)


def promtool_check_metrics(promtool: str, body: str) -> str:
    """What `promtool check metrics` says about an exposition: "" when it finds no problem."""
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60, check=False
    )
    said = (result.stdout + result.stderr).strip()
    return said if result.returncode == 0 else f"{said}\n(exit {result.returncode})"


def watcher_url(s: Settings) -> str:
    return f"http://{s.web_host}:{s.watcher_metrics_port}/metrics"


@contextlib.asynccontextmanager
async def ingested_and_flushed(s: Settings, workdir: Path) -> AsyncIterator[datetime]:
    """A worker and a watcher on the session broker; two notes and a binary file ingested, one flush."""
    await kafka_io.ensure_topics(s)
    await send_unreadable(s)
    with running_worker(s, workdir):
        stop = asyncio.Event()
        watcher = asyncio.create_task(publish_root(s, follow=True, stop=stop))
        try:
            for rel, text in NOTES.items():
                (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
                (s.root / rel).write_text(text, encoding="utf-8")
            (s.root / BINARY).write_bytes(b"\x00\x01\x02binary\x00" * 10)

            async def all_published() -> bool:
                body = await scrape(watcher_url(s))
                return sample(body, "predigest_documents_published_total", kind="inbox", writer="jay") == 2

            await eventually(all_published, 30, "the watcher to publish the notes")
            await wait_ingested(s, 60)
            end = datetime.now(UTC)
            await send_command(s, "inference", "flush", end)
            await await_briefing(s, "inference", end, "flush", 60)
            yield end
        finally:
            stop.set()
            await watcher


async def test_the_worker_and_watcher_metrics_pass_promtool_and_tell_what_happened(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    promtool = ensure_promtool()
    s = make_settings(metrics_interval_seconds=1.0)
    async with ingested_and_flushed(s, tmp_path):
        raw_topic = s.kafka.topic("raw")

        async def polled_gauges_caught_up() -> bool:
            body = await scrape(worker_url(s, "/metrics"))
            return (
                sample(body, "predigest_window_documents", axis="inference") == 2
                and sample(body, "predigest_consumer_lag_messages", topic=raw_topic, partition="0") == 0
                and sample(body, "predigest_kafka_up") == 1
            )

        await eventually(polled_gauges_caught_up, 30, "the worker's polled gauges")
        worker_body = await scrape(worker_url(s, "/metrics"))
        watcher_body = await scrape(watcher_url(s))

    assert promtool_check_metrics(promtool, worker_body) == ""
    assert promtool_check_metrics(promtool, watcher_body) == ""

    w = worker_body
    assert sample(w, "predigest_briefings_emitted_total", axis="inference", trigger="flush") == 1
    assert sample(w, "predigest_briefings_emitted_total", axis="risk", trigger="close") == 0
    assert sample(w, "predigest_documents_rejected_total", reason="binary") == 1
    # Skipped with an error and counted; the notes after them were stored all the same.
    assert sample(w, "predigest_records_unreadable_total", stage="documents") == 2
    assert sample(w, "predigest_end_to_end_lag_seconds_count") == 2  # one per note, whatever its axes
    assert (sample(w, "predigest_duckdb_write_duration_seconds_count", operation="batch") or 0) >= 1
    assert (sample(w, "predigest_last_briefing_timestamp_seconds", axis="inference") or 0) > 0
    assert "predigest_build_info{" in w
    # The time from the flush command to its files, once; RSS and CPU of each process.
    assert sample(w, "predigest_briefing_duration_seconds_count", axis="inference", trigger="flush") == 1
    for body in (w, watcher_body):
        assert (sample(body, "process_resident_memory_bytes") or 0) > 10_000_000
        assert sample(body, "process_cpu_seconds_total") is not None
    # The watcher exports its own series, none of the worker's.
    assert families(watcher_body) - WATCHER_FAMILIES == set()
    assert "predigest_window_documents" in families(w)
    assert sample(watcher_body, "predigest_documents_published_total", kind="inbox", writer="tom") == 1
    assert sample(watcher_body, "predigest_watcher_lag_seconds_count") == 3
    assert sample(watcher_body, "predigest_kafka_up") == 1


def test_promtool_check_metrics_does_complain_about_a_bad_exposition() -> None:
    promtool = ensure_promtool()
    bad = "# HELP predigest_docs Docs\n# TYPE predigest_docs counter\npredigest_docs 1\n"
    assert promtool_check_metrics(promtool, bad) != ""


def _scrape_config(s: Settings, prom_port: int) -> dict[str, Any]:
    """The project's scrape config, pointed at this test's processes and scraping every second."""
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["rule_files"] = [str(DEPLOY / "prometheus" / "alerts.yml")]
    ports = {
        "predigest-worker": s.web_port,
        "predigest-watcher": s.watcher_metrics_port,
        "prometheus": prom_port,
    }
    for job in config["scrape_configs"]:
        job["static_configs"] = [{"targets": [f"127.0.0.1:{ports[job['job_name']]}"]}]
    return config


@contextlib.contextmanager
def prometheus_server(config: dict[str, Any], port: int, workdir: Path) -> Iterator[str]:
    """A real Prometheus server on loopback with temporary storage; yields its base URL."""
    ensure_promtool()  # the same Debian package brings the server
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "prometheus.yml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    log_path = workdir / "prometheus.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={cfg}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
        try:
            return httpx.get(f"{base}/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(ready, 60, "Prometheus to be ready")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def query(base: str, promql: str) -> Any:
    return await get_json(f"{base}/api/v1/query", query=promql)


async def test_a_real_prometheus_scrapes_the_worker_and_reports_its_briefings(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(metrics_interval_seconds=1.0)
    prom_port = free_port()
    async with ingested_and_flushed(s, tmp_path):
        with prometheus_server(_scrape_config(s, prom_port), prom_port, tmp_path / "prometheus") as base:

            async def scraped() -> bool:
                answer = await query(base, 'predigest_briefings_emitted_total{trigger="flush"}')
                result = answer["data"]["result"]
                return bool(result) and result[0]["value"][1] == "1"

            await eventually(scraped, 60, "Prometheus to scrape the flush briefing")
            result = (await query(base, "predigest_briefings_emitted_total"))["data"]["result"]
            by_labels = {(r["metric"]["axis"], r["metric"]["trigger"]): r["value"][1] for r in result}
            assert by_labels[("inference", "flush")] == "1"
            assert by_labels[("inference", "close")] == "0"
            assert {r["metric"]["job"] for r in result} == {"predigest-worker"}

            async def every_target_up() -> bool:
                targets = (await get_json(f"{base}/api/v1/targets"))["data"]["activeTargets"]
                health = {t["labels"]["job"]: t["health"] for t in targets}
                return health == {"predigest-worker": "up", "predigest-watcher": "up", "prometheus": "up"}

            await eventually(every_target_up, 30, "every scrape target to be up")

            async def rules_evaluated() -> bool:
                groups = (await get_json(f"{base}/api/v1/rules"))["data"]["groups"]
                rules = [r for g in groups for r in g["rules"]]
                return len(rules) == len(alert_rules()) and all(r["health"] == "ok" for r in rules)

            await eventually(rules_evaluated, 30, "every alert rule to evaluate cleanly")

            async def only_the_dead_letters_alert() -> bool:
                firing = (await query(base, 'ALERTS{alertstate="firing"}'))["data"]["result"]
                alerts = {
                    (r["metric"]["alertname"], r["metric"].get("stage"), r["metric"].get("reason"))
                    for r in firing
                }
                return alerts == {("PredigestDeadLetters", "documents", "unreadable")}

            # The two unreadable records were dead-lettered before Prometheus's first scrape: increase() alone saw the
            # series start at 2 and never fired; the worker started within the window, so its count is its increase.
            await eventually(only_the_dead_letters_alert, 30, "the dead letters' alert, and no other")

            for promql in dashboard_queries():  # every dashboard query parses and runs on the real server
                answer = await query(base, promql)
                assert answer["status"] == "success", (promql, answer)
            up = (await query(base, "min by (job) (predigest_kafka_up)"))["data"]["result"]
            assert {r["metric"]["job"]: r["value"][1] for r in up} == {
                "predigest-worker": "1",
                "predigest-watcher": "1",
            }
