"""Alternated 10k ingests, main's frames against another zstd level or a dictionary: CPU a note by process (zstd45).

`python -m bench.zstd45.ingest ROOT WORK VARIANT PAIRS [FIRST_PAIR]`: one broker for all runs, fresh topics and
state each run, after one unmeasured run of main; odd pairs main first, even pairs the variant first. The variant,
LEVEL or LEVEL:DICTIONARY, is the worker started with ZSTD45_LEVEL (and ZSTD45_DICT), read once at import by
streams.parse_process (zstd45's throwaway switch). Each run's CPU is taken from the worker's Ready to the group's
caught-up lag: the worker itself, its parse processes (live ones and those it reaped), the broker, the backfill
(the whole process, reaped by this harness); the harness's own lag polling is not counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path

from bench import procs
from bench.broker import Broker
from bench.pipeline_run import bench_settings, ingest
from streams import kafka_io
from streams.worker_process import stop_process

HZ = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [int(x) for x in fields[11:15]]  # utime, stime, cutime, cstime


def _worker_split(pid: int) -> tuple[float, float]:
    """(the worker's own seconds, its parse processes' seconds: live children and reaped ones)."""
    u, s, cu, cs = _stat(pid)
    live = 0
    for child in procs.child_pids(pid):
        try:
            cu_, cs_, *_ = _stat(child)
        except OSError:
            continue
        live += cu_ + cs_
    return (u + s) / HZ, (cu + cs + live) / HZ


def _children_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(broker: Broker, root: Path, work: Path, variant: str | None) -> dict[str, float]:
    """One ingest of `root`; main's frames when `variant` (LEVEL or LEVEL:DICTIONARY) is None."""
    work.mkdir(parents=True)
    for name in ("ZSTD45_LEVEL", "ZSTD45_DICT"):
        os.environ.pop(name, None)
    if variant is not None:
        level, _, dictionary = variant.partition(":")
        os.environ["ZSTD45_LEVEL"] = level
        if dictionary:
            os.environ["ZSTD45_DICT"] = dictionary
    settings = bench_settings(broker.bootstrap, root, work, "z")
    asyncio.run(kafka_io.ensure_topics(settings))
    load0 = procs.loadavg()
    worker = procs.spawn(settings, work, "worker", "worker")
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 180)
        w0, p0 = _worker_split(worker.pid)
        b0 = sum(_stat(broker.pids[0])[:2]) / HZ
        c0 = _children_s()
        rss = procs.RssWatch()
        got = ingest(settings, work, 900, rss)
        rss.close()
        w1, p1 = _worker_split(worker.pid)
        b1 = sum(_stat(broker.pids[0])[:2]) / HZ
        bf = _children_s() - c0
    finally:
        stop_process(worker, timeout=20)
    n = max(got.notes_parsed, 1)
    topic = broker.data / "logs" / f"{settings.kafka.topic('documents')}-0"
    kb = sum(f.stat().st_size for f in topic.glob("*.log")) / n / 1024  # the documents topic's bytes a note
    us = {"worker": w1 - w0, "parse": p1 - p0, "broker": b1 - b0, "backfill": bf}
    out = {k: round(v / n * 1e6) for k, v in us.items()}
    out["all"] = sum(out.values())
    secs = got.done_s or got.elapsed_s
    return {
        **out,
        "notes": got.notes_parsed,
        "rows": got.rows_stored,
        "records": got.events,
        "documents_kb": round(kb, 2),
        "rate": round(got.notes_parsed / secs),
        "load": f"{load0:.1f}-{procs.loadavg():.1f}",  # type: ignore[dict-item]
    }


def main(root: Path, work: Path, variant: str, pairs: int, first: int = 1) -> None:
    broker = Broker.start(work / "broker")
    try:
        one(broker, root, work / f"warm-up-{time.time_ns()}", None)  # the broker's first run: not measured
        for pair in range(first, first + pairs):
            order: list[str | None] = [None, variant] if pair % 2 else [variant, None]
            for v in order:
                label = "main" if v is None else "variant"
                got = one(broker, root, work / f"p{pair}-{label}-{time.time_ns()}", v)
                print(json.dumps({"pair": pair, "variant": label, **got}), flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main(
        Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), *(int(a) for a in sys.argv[5:6])
    )
