"""The watcher over a large root of small files (issue 15 item 7): its first start, its rescans of unchanged files
(time and CPU), a restart, and how long a note renamed into place waits while full rescans run back to back.

    python -m bench.watcher_scale --n 100000   (starts its own broker)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench import procs
from bench.pipeline_run import bench_settings
from streams.settings import Settings
from streams.worker_process import PROJECT, stop_process

WRITERS = ("jay", "tom", "spark", "flyp", "stephen")
_PUBLISHED = re.compile(
    r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) INFO \S+: published (\S+) \(", re.MULTILINE
)
_STARTUP = re.compile(r"startup scan published (\d+) file\(s\) in ([\d.]+)s")


def build_root(root: Path, n: int) -> float:
    """n notes of a few dozen bytes under five writers' inboxes, last written two hours ago; seconds taken."""
    began = time.monotonic()
    old = time.time() - 7200
    for w in WRITERS:
        (root / "inbox" / w).mkdir(parents=True, exist_ok=True)
    for top in ("paper_cards", "work-queue", "living"):
        (root / top).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        path = root / "inbox" / WRITERS[i % 5] / f"2026-09-27-{i % 24:02d}{i % 60:02d}-n{i}.md"
        path.write_bytes(f"# note {i}\nvLLM KV cache {i}\n".encode())
        os.utime(path, (old, old))
    for folder in root.rglob("*"):
        if folder.is_dir():
            os.utime(folder, (old, old))
    return time.monotonic() - began


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rescans(settings: Settings) -> dict[str, tuple[float, float, float]]:
    """pass → (count, seconds, CPU seconds) of the watcher's rescans so far, from its /metrics."""
    text = httpx.get(f"http://{settings.web_host}:{settings.watcher_metrics_port}/metrics", timeout=5).text
    which = {
        "predigest_watcher_rescan_duration_seconds_count": 0,
        "predigest_watcher_rescan_duration_seconds_sum": 1,
        "predigest_watcher_rescan_cpu_seconds_total": 2,
    }
    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in which:
                out.setdefault(s.labels["pass"], [0.0, 0.0, 0.0])[which[s.name]] = s.value
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def _watch(settings: Settings, work: Path, name: str) -> Any:
    proc = procs.spawn(settings, work, name, "watch")
    procs.wait_log(work / f"{name}.log", "startup scan published", proc, 900)
    m = _STARTUP.search((work / f"{name}.log").read_text(errors="replace"))
    assert m is not None
    return proc, int(m.group(1)), float(m.group(2))


def _latencies(root: Path, log: Path, notes: int) -> list[float]:
    """Notes renamed into place once a second (no quiet period): seconds from the rename to the published line."""
    renamed: dict[str, float] = {}
    for i in range(notes):
        rel = f"inbox/jay/2026-09-27-2359-fresh-{i}.md"
        tmp = root / f"inbox/jay/.fresh-{i}.tmp"
        tmp.write_text(f"# fresh {i}\nvLLM\n", encoding="utf-8")
        os.replace(tmp, root / rel)
        renamed[rel] = time.time()
        time.sleep(1.0 + (i % 3) * 0.13)  # not in step with the rescans
    time.sleep(2)
    published = {
        m.group(2): datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # noqa: DTZ007
        for m in _PUBLISHED.finditer(log.read_text(errors="replace"))
    }
    return [published[rel] - at for rel, at in renamed.items() if rel in published]


def measure(bootstrap: str, work: Path, n: int, idle_seconds: float = 36.0) -> dict[str, Any]:
    """The figures of one large root; the broker at `bootstrap` must be up."""
    root = work / "root"
    out: dict[str, Any] = {"files": n, "build_s": round(build_root(root, n), 1)}
    base = {"rescan_seconds": 3.0}
    settings = bench_settings(bootstrap, root, work, "watch", **base)
    # First start: every file is new; then idle, with a rescan every 3 s (every tenth a full pass).
    proc, published, seconds = _watch(settings, work, "watcher-first")
    try:
        out["first_start_s"], out["first_start_published"] = seconds, published
        out["first_start_cpu_s"] = round(_cpu_seconds(proc.pid), 1)
        before, cpu = _rescans(settings), _cpu_seconds(proc.pid)
        time.sleep(idle_seconds)
        cpu, after = _cpu_seconds(proc.pid) - cpu, _rescans(settings)
    finally:
        stop_process(proc, timeout=20)
    for kind, (count, total, cpu_total) in after.items():
        was = before.get(kind, (0.0, 0.0, 0.0))
        done = count - was[0]
        if done:
            out[f"rescan_{kind}_s"] = round((total - was[1]) / done, 3)
            out[f"rescan_{kind}_cpu_s"] = round((cpu_total - was[2]) / done, 3)
            out[f"rescans_{kind}"] = int(done)
    out["idle_cpu_s"], out["idle_s"] = round(cpu, 2), idle_seconds
    out["idle_cores"] = round(cpu / idle_seconds, 4)
    # Restart over the same root and ledger, full rescans back to back, and notes renamed into place meanwhile.
    busy = settings.model_copy(update={"rescan_seconds": 0.5, "full_rescan_every": 1})
    proc, published, seconds = _watch(busy, work, "watcher-restart")
    try:
        out["restart_s"], out["restart_published"] = seconds, published
        waits = _latencies(root, work / "watcher-restart.log", 20)
        passes = _rescans(busy).get("full", (0.0, 0.0, 0.0))
    finally:
        stop_process(proc, timeout=20)
    out["note_latency_during_full_rescans_s"] = {
        "notes": len(waits),
        "p50": round(statistics.median(waits), 3) if waits else None,
        "max": round(max(waits), 3) if waits else None,
        "full_rescans_meanwhile": int(passes[0]),
        "full_rescan_s": round(passes[1] / passes[0], 3) if passes[0] else None,
    }
    return out


def main() -> None:
    from streams.kafka_local import start_broker, stop_broker

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--work", type=Path, default=None)
    a = p.parse_args()
    work = a.work or Path(os.environ.get("TMPDIR", "/tmp")) / f"predigest-watcher-bench-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    cache = PROJECT / ".cache" / "kafka"
    bootstrap = start_broker(cache, work / "kafka")
    try:
        print(measure(bootstrap, work, a.n), flush=True)
    finally:
        stop_broker(cache, work / "kafka")


if __name__ == "__main__":
    main()
