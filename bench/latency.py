"""Steady-state latency through the real watcher: a writer at a fixed rate, file write → DuckDB row.

The row's time is the worker's own log line "stored <path> for axis …", written right after the DuckDB
commit, so the worker's state file is never opened while it runs.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from datetime import datetime
from pathlib import Path

from bench import procs
from bench.archive import WRITERS, Generator, living_documents

# The worker's text log line starts with its time (streams.logs.TEXT_FORMAT; mode's bracketed one before).
_STORED = re.compile(r"^\[?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\]? .*?stored (\S+) for axis", re.M)


def write_notes(root: Path, rate: float, seconds: float, seed: int) -> dict[str, float]:
    """Write notes atomically (temp name, then rename, as writers do) at `rate` per second; path → time."""
    gen = Generator(seed)
    written: dict[str, float] = {}
    t0 = time.monotonic()
    for i in range(int(rate * seconds)):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        rel, content, _ = gen.note(i)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, path)
        written[rel] = time.time()
    return written


def stored_times(log: Path) -> dict[str, float]:
    """path → when the worker logged its first stored row (the log's local time, millisecond resolution)."""
    found: dict[str, float] = {}
    for m in _STORED.finditer(log.read_text(errors="replace")):
        if m.group(2) not in found:
            found[m.group(2)] = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # noqa: DTZ007
    return found


def percentiles(values: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": round(qs[49] * 1000), "p99": round(qs[98] * 1000), "max": round(max(values) * 1000)}


def prepare_root(root: Path) -> None:
    """A root as deployed: the top folders, each writer's inbox folder and the living documents."""
    for top in ("inbox", "paper_cards", "work-queue", "living"):
        (root / top).mkdir(parents=True, exist_ok=True)
    # A note renamed into a folder made a moment before waits for the quiet period (its folder's inotify watch
    # comes after the rename: docs/guarantees.md); a deployed root has its writers' folders before their notes.
    for writer in WRITERS:
        (root / "inbox" / writer).mkdir(exist_ok=True)
    for rel, content in living_documents().items():
        (root / rel).write_text(content, encoding="utf-8")


def measure(
    root: Path, worker_log: Path, rate: float, seconds: float, settle_s: float = 30.0
) -> dict[str, object]:
    """Write at `rate` for `seconds`, wait for every note's row, return the latency percentiles in ms."""
    written = write_notes(root, rate, seconds, seed=4242)
    deadline = time.monotonic() + settle_s
    stored: dict[str, float] = {}
    while time.monotonic() < deadline:
        stored = stored_times(worker_log)
        if all(rel in stored for rel in written):
            break
        time.sleep(0.5)
    lat = [stored[rel] - at for rel, at in written.items() if rel in stored]
    out: dict[str, object] = {"notes": len(written), "stored": len(lat), "rate_per_s": rate}
    if len(lat) >= 2:
        out.update(percentiles(lat))
    procs.loadavg()
    return out
