"""Reads against ingest (issue 16 item 4): what `GET /status` costs with N notes in the window, and the ingest
latency of a steady writer with and without pollers hammering the worker's read routes.

python -m bench.read_load [--n 3600] [--pollers 4] [--seconds 30] [--rate 2] [--out bench/read_load.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench import latency, procs
from bench.archive import Generator
from bench.pipeline_run import bench_settings, ingest
from streams import kafka_io
from streams.kafka_local import start_broker, stop_broker
from streams.settings import Settings
from streams.worker_process import PROJECT, stop_process

_DATE = re.compile(r"^date: .*$", re.M)


def say(line: str) -> None:
    print(line, flush=True)


def write_window(root: Path, n: int, now: datetime) -> None:
    """n generated notes dated within the last 24 h, so the window `/status` reads holds all of them."""
    gen = Generator(seed=1717)
    rng = random.Random(1717)
    for i in range(n):
        rel, content, _ = gen.note(i)
        when = now - timedelta(seconds=rng.randint(600, 23 * 3600))
        content = _DATE.sub(f"date: {when.isoformat()}", content, count=1)
        if not content.startswith("---"):
            content = f"---\ndate: {when.isoformat()}\n---\n{content}"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def wait_stored(log: Path, paths: set[str], timeout: float) -> dict[str, float]:
    """path → when the worker stored it, once every path is stored or `timeout` passed."""
    deadline = time.monotonic() + timeout
    while True:
        stored = latency.stored_times(log)
        if paths <= set(stored) or time.monotonic() > deadline:
            return stored
        time.sleep(0.5)


def get_seconds(url: str, tries: int) -> list[float]:
    took = []
    with httpx.Client(timeout=60) as http:
        for _ in range(tries):
            t = time.perf_counter()
            http.get(url).raise_for_status()
            took.append(time.perf_counter() - t)
    return took


@dataclass
class Pollers:
    """Threads that GET a URL in a loop, as fast as it answers."""

    url: str
    count: int
    stop: threading.Event = field(default_factory=threading.Event)
    took: list[float] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)
    errors: int = 0

    def _run(self) -> None:
        with httpx.Client(timeout=60) as http:
            while not self.stop.is_set():
                t = time.perf_counter()
                try:
                    response = http.get(self.url)
                    response.raise_for_status()
                except httpx.HTTPError:
                    self.errors += 1
                    continue
                self.took.append(time.perf_counter() - t)
                age = (
                    response.json().get("snapshot", {}).get("age_seconds")
                    if "json" in response.headers.get("content-type", "")
                    else None
                )
                if isinstance(age, int | float):
                    self.ages.append(float(age))

    def __enter__(self) -> Pollers:
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(self.count)]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(timeout=70)


def ms(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {}
    qs = statistics.quantiles(values, n=100, method="inclusive")
    return {
        "p50_ms": round(qs[49] * 1000, 1),
        "p99_ms": round(qs[98] * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
    }


def run(settings: Settings, work: Path, a: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"n": a.n, "pollers": a.pollers, "rate_per_s": a.rate, "seconds": a.seconds}
    asyncio.run(kafka_io.ensure_topics(settings))
    rss = procs.RssWatch()
    worker = procs.spawn(settings, work, "worker", "worker")
    watcher = None
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 120)
        got = ingest(settings, work, 600, rss)
        say(f"ingested {a.n} notes in {got.done_s}s")
        status_url = f"http://{settings.web_host}:{settings.web_port}/status"
        get_seconds(status_url, 1)  # the first request may open the state
        cost = get_seconds(status_url, 10)
        out["status_seconds"] = {"median": round(statistics.median(cost), 3), "max": round(max(cost), 3)}
        say(
            f"GET /status with {a.n} notes in the window: median {statistics.median(cost):.3f}s, max {max(cost):.3f}s"
        )
        watcher = procs.spawn(settings, work, "watcher", "watch")
        procs.wait_log(work / "watcher.log", "startup scan published", watcher, 120)
        time.sleep(3)
        for label, pollers in (("quiet", 0), ("with_pollers", a.pollers), ("quiet_again", 0)):
            seed = {"quiet": 4242, "with_pollers": 4343, "quiet_again": 4444}[label]
            with Pollers(status_url, pollers) as p:
                written = latency.write_notes(settings.root, a.rate, a.seconds, seed=seed)
                time.sleep(5)
            stored = wait_stored(work / "worker.log", set(written), 90)
            lat = [stored[rel] - at for rel, at in written.items() if rel in stored]
            run_out: dict[str, Any] = {"notes": len(written), "stored": len(lat), **ms(lat)}
            if pollers:
                run_out.update(
                    requests=len(p.took),
                    requests_per_s=round(len(p.took) / (a.seconds + 5), 1),
                    errors=p.errors,
                    request=ms(p.took),
                    snapshot_age_max_s=round(max(p.ages), 2) if p.ages else None,
                )
            out[label] = run_out
            say(f"{label}: {json.dumps(run_out)}")
    finally:
        if watcher is not None:
            stop_process(watcher, timeout=20)
        stop_process(worker, timeout=20)
        rss.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=3600)
    p.add_argument("--pollers", type=int, default=4)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--rate", type=float, default=2.0)
    p.add_argument("--out", type=Path, default=PROJECT / "bench" / "read_load.json")
    a = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="predigest-reads-"))
    say(f"work folder {base}")
    bootstrap = start_broker(PROJECT / ".cache" / "kafka", base / "kafka")
    try:
        root = base / "root"
        latency.prepare_root(root)
        write_window(root, a.n, datetime.now(UTC))
        settings = bench_settings(bootstrap, root, base, "reads")
        result = run(settings, base, a)
    finally:
        stop_broker(PROJECT / ".cache" / "kafka", base / "kafka")
    result["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    a.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    say(f"written {a.out}")


if __name__ == "__main__":
    main()
