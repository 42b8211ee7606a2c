"""The bench's ingest (backfill → Kafka → worker → DuckDB) run by schedule, main and a variant alternated, with each
process's CPU from the backfill's spawn to the lag's zero, and a checksum of the rows stored.

A run is `main` or `variant` (the worker started with STORE45_VARIANT=1: a switch read at import in commit 66acbae
only, where main's store runs without it; after it both run the branch's code). Pairs alternate: odd pairs main first, even pairs the variant first. One
JSON line a run. Copied from bench/parse44/ingest.py (branch parse44), its recording step dropped.

    python -m bench.store45.ingest --root /tmp/store45/root-10000 --schedule pairs:3 --out /tmp/store45/runs.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb

from bench import procs
from bench.broker import Broker
from bench.pipeline_run import _records, _until_caught_up, bench_settings
from streams import kafka_io
from streams.settings import Settings
from streams.worker_process import spawn_cli, stop_process

CAP_S = 1800.0
ENV = {"variant": "STORE45_VARIANT"}
CHECKSUM = """
SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM contents), (SELECT count(*) FROM source_rows),
  (SELECT count(*) FROM source_terms),
  (SELECT sum(hash(axis, path, sha256, event_time, kind)) FROM documents)
  + (SELECT sum(hash(path, sha256, summary_json, body_zst)) FROM contents)
  + (SELECT sum(hash(path, sha256, text_hash, length, arxiv_ids, topic, summary_json)) FROM source_rows)
  + (SELECT sum(hash(s.path, t.term, t.n, t.k)) FROM source_terms t JOIN source_rows s USING (vid))
  + (SELECT sum(hash(s.path, g.signature)) FROM source_signatures g JOIN source_rows s USING (vid))
  + coalesce((SELECT sum(hash(s.path, t.n, t.id, t.title)) FROM source_titles t JOIN source_rows s USING (vid)), 0)
"""


def _cpu(pid: int) -> int:
    """utime + stime of one live process, jiffies (0 once gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def _snapshot(worker: int, broker: list[int]) -> dict[str, int]:
    children = procs.child_pids(worker)
    t = os.times()
    return {
        "worker": _cpu(worker),
        "parse": sum(_cpu(c) for c in children),
        "parse_n": len(children),
        "broker": sum(_cpu(b) for b in broker),
        "reaped": round((t.children_user + t.children_system) * procs.HZ),
    }


def _checksum(settings: Settings) -> list[Any]:
    with duckdb.connect(str(settings.state_file), read_only=True) as db:
        row = db.execute(CHECKSUM).fetchone()
    return [int(x) for x in row] if row else []


def _wait_children(worker: int, want: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(procs.child_pids(worker)) < want and time.monotonic() < deadline:
        time.sleep(0.2)


def one_run(broker: Broker, root: Path, work: Path, kind: str) -> dict[str, Any]:
    """One ingest of `root` by a fresh worker: CPU a note by process, the rate, the rows' checksum."""
    settings = bench_settings(broker.bootstrap, root, work, f"s45{kind}")
    asyncio.run(kafka_io.ensure_topics(settings))
    env = ENV.get(kind)
    if env:
        os.environ[env] = "1"
    try:
        worker = spawn_cli(settings, work, "worker", "worker")
    finally:
        if env:
            del os.environ[env]
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 180)
        _wait_children(worker.pid, settings.parse_processes, 60)
        time.sleep(3)
        return _measured(settings, work, worker.pid, broker.pids) | {"kind": kind}
    finally:
        stop_process(worker, timeout=30)


def _measured(settings: Settings, work: Path, worker: int, broker: list[int]) -> dict[str, Any]:
    load0 = procs.loadavg()
    before = _snapshot(worker, broker)
    rss = procs.RssWatch()
    t0 = time.monotonic()
    bf = spawn_cli(settings, work, "backfill", "backfill", "--root", str(settings.root))
    try:
        backfill_s, done_s = asyncio.run(_until_caught_up(settings, bf, t0, CAP_S, rss))
        after = _snapshot(worker, broker)
        load1 = procs.loadavg()
    finally:
        rss.close()
        if bf.poll() is None:
            stop_process(bf)
    raw = asyncio.run(_records(settings, "raw"))
    lag = sum(
        asyncio.run(kafka_io.group_lag(settings, settings.app_id, [settings.kafka.topic("raw")])).values()
    )
    n = raw - lag
    cpu = {k: (after[k] - before[k]) / procs.HZ for k in ("worker", "parse", "broker")}
    cpu["backfill"] = (after["reaped"] - before["reaped"]) / procs.HZ
    us = {k: round(v / max(n, 1) * 1e6) for k, v in cpu.items()}
    us["all"] = sum(us.values())
    return {
        "notes": n,
        "done_s": done_s,
        "backfill_s": backfill_s,
        "rate": round(n / done_s, 1) if done_s else None,
        "us": us,
        "load": [load0, load1],
        "parse_processes": after["parse_n"],
        "records": asyncio.run(_records(settings, "documents")),
        "rows_stored": procs.metric_sum(settings, "predigest_documents_stored_total"),
        "settings": settings,
    }


def _plan(schedule: str) -> list[str]:
    out: list[str] = []
    for step in schedule.split(","):
        if step.startswith("pairs:"):  # pairs:N, or pairs:N:FIRST to number them on from an earlier run's
            _, n, *first = step.split(":")
            for i in range(int(first[0]) - 1 if first else 0, (int(first[0]) - 1 if first else 0) + int(n)):
                out += ["main", "variant"] if i % 2 == 0 else ["variant", "main"]
        else:
            out.append(step)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, required=True)
    p.add_argument("--schedule", default="pairs:3")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("/tmp/store45/work"))
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    broker = Broker.start(a.work / f"kafka-{os.getpid()}")
    try:
        for i, kind in enumerate(_plan(a.schedule)):
            work = a.work / f"run-{os.getpid()}-{i}-{kind}"
            work.mkdir()
            got = one_run(broker, a.root, work, kind)
            settings: Settings = got.pop("settings")
            got["checksum"] = _checksum(settings)
            with a.out.open("a") as f:
                f.write(json.dumps(got) + "\n")
            print(json.dumps(got), flush=True)
            shutil.rmtree(work / "state", ignore_errors=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
