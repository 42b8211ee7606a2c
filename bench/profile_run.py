"""A worker under pyinstrument while it ingests a root: where its time goes (part of `make bench`, or alone).

python -m bench.profile_run [--n 10000] [--seconds 45]    # a broker and an archive of its own, ~2 minutes
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import archive, procs
from bench.broker import Broker
from bench.pipeline_run import bench_settings, ingest
from streams import kafka_io
from streams.worker_process import PROJECT, stop_process


def profile_worker(
    broker: Broker, root: Path, work: Path, seconds: float, saved: Path = PROJECT / "bench" / "profiles"
) -> dict[str, Any]:
    """The worker under pyinstrument for the first `seconds` of ingesting `root`, rendered into `saved`."""
    settings = bench_settings(broker.bootstrap, root, work, "profile")
    asyncio.run(kafka_io.ensure_topics(settings))
    session = work / "worker.pyisession"
    worker = procs.spawn(settings, work, "worker", "worker", profile=session)
    rss = procs.RssWatch()
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 120)
        got = ingest(settings, work, seconds, rss)
    finally:
        stop_process(worker, timeout=60)
        rss.close()
    saved.mkdir(parents=True, exist_ok=True)
    n = root.name.removeprefix("root-")
    report = saved / f"worker-{n}.txt"
    procs.render_profile(session, report)
    return {
        "seconds": got.elapsed_s,
        "notes_parsed": got.notes_parsed,
        "rows_stored": got.rows_stored,
        "report": str(report.relative_to(PROJECT) if report.is_relative_to(PROJECT) else report),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10000, help="notes in the generated archive")
    p.add_argument("--seconds", type=float, default=45.0, help="how long the worker is profiled")
    a = p.parse_args()
    base = Path(tempfile.mkdtemp(prefix="predigest-profile-"))
    broker = Broker.start(base / "kafka")
    try:
        archive.generate(base / f"root-{a.n}", a.n)
        (base / "work").mkdir()
        out = profile_worker(broker, base / f"root-{a.n}", base / "work", a.seconds)
        print(
            f"profile: worker on N={a.n}, first {out['seconds']:.0f}s ({out['notes_parsed']} files parsed, "
            f"{out['rows_stored']:.0f} rows stored) -> {out['report']}"
        )
    finally:
        broker.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
