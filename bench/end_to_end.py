"""The runs over Kafka: bare aiokafka, the backfill codecs, backfill → worker → DuckDB → briefing, and latency."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import archive, latency, procs
from bench.broker import Broker
from bench.pipeline_run import Ingest, bench_settings, briefing_in_process, flush_and_wait, ingest
from streams import kafka_io
from streams.backfill import backfill
from streams.settings import Settings
from streams.worker_process import PROJECT, stop_process


def bare_kafka(broker: Broker, root: Path, n_files: int, work: Path, tag: str) -> float:
    """Files per second of a bare aiokafka producer → broker → consumer round trip of the archive's bytes."""
    settings = bench_settings(broker.bootstrap, root, work, f"bare{tag}")
    asyncio.run(kafka_io.ensure_topics(settings))
    topic = settings.kafka.topic("raw")
    ready = work / f"bare-{tag}.ready"
    py = [sys.executable, "-m", "bench.baseline"]
    args = ["--bootstrap", broker.bootstrap, "--topic", topic]
    consume = [*py, "consume", *args, "--count", str(n_files), "--ready", str(ready)]
    consumer = subprocess.Popen(consume, stdout=subprocess.PIPE, cwd=PROJECT)
    while not ready.exists():
        if consumer.poll() is not None:
            raise RuntimeError("bare consumer exited")
        time.sleep(0.1)
    t0 = time.time()
    produce = [*py, "produce", *args, "--root", str(root)]
    subprocess.run(produce, check=True, cwd=PROJECT, stdout=subprocess.DEVNULL)
    out, _ = consumer.communicate(timeout=600)
    last = json.loads(out)["last_at"]
    return round(n_files / (last - t0), 1)


def codecs(broker: Broker, root: Path, work: Path) -> dict[str, float]:
    """Backfill files/s of the same root with each compression codec (fresh topics and ledger each)."""
    rates = {}
    for codec in ("zstd", "lz4", "gzip", "none"):
        settings = bench_settings(broker.bootstrap, root, work / f"codec-{codec}", f"codec{codec}")
        report = asyncio.run(backfill(settings, compression=codec))
        rates[codec] = round(report.published / report.seconds, 1)
    return rates


def _ingest_figures(
    stats: archive.ArchiveStats, got: Ingest, rss: procs.RssWatch, rows_per_note: float
) -> dict[str, Any]:
    """What an ingest came to; a run cut short counts the notes whose rows (`rows_per_note`) are all stored."""
    out: dict[str, Any] = {
        "notes": stats.notes,
        "files": stats.files,
        "archive_mb": round(stats.bytes / 1e6, 1),
        "backfill_files_per_s": got.backfill_files_per_s,
        "backfill_s": got.backfill_s,
        "ingest_s": got.done_s if got.done_s is not None else got.elapsed_s,
        "complete": got.done_s is not None,
        "notes_parsed": got.notes_parsed,
        "rows_stored": got.rows_stored,
        "worker_rss_ingest_mib": round(rss.peaks.get("worker", 0.0), 1),
        "backfill_rss_mib": round(rss.peaks.get("backfill", 0.0), 1),
    }
    out["records_per_note"] = round(got.events / max(got.notes_parsed, 1), 2)
    out["rows_per_note"] = rows_per_note
    # Cut short: the notes whose rows are all in DuckDB, from the rows stored and a note's axes (a documents
    # record holds every axis of its partition, so the topic's records do not count rows).
    done = stats.files if got.done_s is not None else got.rows_stored / max(rows_per_note, 0.01)
    out["notes_stored"] = round(done)
    out["docs_per_s"] = round(done / out["ingest_s"], 1)
    return out


def _brief_stored(settings: Settings, work: Path, out: dict[str, Any], timeout: float) -> None:
    """After a cut run: brief what the stopped worker stored, over its state file, in a process of its own."""
    b = briefing_in_process(settings, work, timeout)
    out.update(
        briefing_s=b.get("briefing_s"),
        briefing_sources=b.get("briefing_sources", 0),
        briefing_via="in-process over the stored state",
    )
    out["worker_rss_mib"] = max(out["worker_rss_mib"], b["briefing_rss_mib"])


def pipeline(
    broker: Broker, root: Path, stats: archive.ArchiveStats, work: Path, limits: dict[str, float]
) -> dict[str, Any]:
    """backfill → worker → DuckDB, then the briefing of the whole window; the worker's peak RSS throughout.

    `limits`: `cap` (seconds the ingest may take), `brief` and `cut_brief` (the briefing's timeouts), and
    `rows_per_note` (the archive's axes per note, from the stages).
    """
    settings = bench_settings(broker.bootstrap, root, work, f"n{stats.notes}")
    asyncio.run(kafka_io.ensure_topics(settings))
    rss = procs.RssWatch()
    cpu = procs.CpuMeter(extra_pids=broker.pids).start()
    worker = procs.spawn(settings, work, "worker", "worker")
    rss.watch("worker", worker.pid, children=True)
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 120)
        got = ingest(settings, work, limits["cap"], rss)
        rss.sample()
        out = _ingest_figures(stats, got, rss, limits["rows_per_note"])
        if out["complete"]:
            b_s, sources = asyncio.run(flush_and_wait(settings, limits["brief"]))
            out.update(briefing_s=b_s, briefing_sources=sources, briefing_via="kafka flush")
    finally:
        stop_process(worker, timeout=20)
        rss.sample()
        rss.close()
    out["worker_rss_mib"] = round(rss.peaks.get("worker", 0.0), 1)
    out["parse_processes_rss_mib"] = round(rss.peaks.get("worker_children", 0.0), 1)
    if not out["complete"]:
        _brief_stored(settings, work, out, limits["cut_brief"])
    out["others_cores"] = cpu.others_cores()
    return out


def steady_latency(broker: Broker, work: Path, rate: float, seconds: float) -> dict[str, Any]:
    """The real watcher (default quiet period) and worker on an empty root; a writer at `rate` notes/s."""
    root = work / "root"
    latency.prepare_root(root)
    settings = bench_settings(broker.bootstrap, root, work, "latency")
    asyncio.run(kafka_io.ensure_topics(settings))
    rss = procs.RssWatch()
    worker = procs.spawn(settings, work, "worker", "worker")
    watcher = procs.spawn(settings, work, "watcher", "watch")
    rss.watch("worker", worker.pid)
    rss.watch("watcher", watcher.pid)
    cpu = procs.CpuMeter(extra_pids=broker.pids).start()
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 120)
        procs.wait_log(work / "watcher.log", "startup scan published", watcher, 60)
        time.sleep(3)  # the living documents of the startup scan go through first
        out = latency.measure(root, work / "worker.log", rate, seconds)
    finally:
        stop_process(watcher, timeout=20)
        stop_process(worker, timeout=20)
        rss.close()
    out["quiet_seconds"] = settings.quiet_seconds
    out["watcher_rss_mib"] = round(rss.peaks.get("watcher", 0.0), 1)
    out["worker_rss_mib"] = round(rss.peaks.get("worker", 0.0), 1)
    out["others_cores"] = cpu.others_cores()
    return out
