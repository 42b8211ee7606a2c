"""`make bench`: the end-to-end benchmark of issues 6 and 14; prints one line per figure, writes bench/results.json
and the figures table of docs/performance.md (bench/report.py).

python -m bench.run [--n 1000,10000,100000] [--cap 1200] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import archive, end_to_end, parse_growth, procs, report, stages, watcher_scale
from bench.broker import Broker
from bench.figure_lines import machine, say, say_latency, say_run, say_scaling, say_stages, say_watcher
from bench.profile_run import profile_worker
from bench.verdicts import TARGETS, verdicts
from streams.worker_process import PROJECT

Roots = dict[int, tuple[Path, archive.ArchiveStats]]


def _arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", default=os.environ.get("N", "1000,10000,100000"))
    # 1 200 s: the 100k ingest completes at 85+ notes/s (the cap was 100 s, which needs 1 000 notes/s; this
    # shared 2-core box makes 100-300), so its targets are measured, not extrapolated (docs/performance.md).
    p.add_argument(
        "--cap", type=float, default=1200.0, help="seconds an ingest may take before it is cut short"
    )
    p.add_argument("--brief-timeout", type=float, default=180.0, help="seconds a flush may take")
    p.add_argument("--cut-brief-timeout", type=float, default=45.0, help="the same after a cut-short ingest")
    p.add_argument("--latency-seconds", type=float, default=30.0)
    p.add_argument("--profile-seconds", type=float, default=45.0)
    p.add_argument("--out", type=Path, default=PROJECT / "bench" / "results.json")
    p.add_argument(
        "--page", type=Path, default=report.PAGE, help="the docs page whose figures table is rewritten"
    )
    p.add_argument("--keep", action="store_true", help="keep the work folder (archives, logs, profiles)")
    a = p.parse_args()
    if not a.page.is_file():  # found out only at the end, after a quarter of an hour, otherwise
        p.error(f"--page {a.page}: no such file (give the docs page whose figures table is rewritten)")
    return a


def _roots(base: Path, sizes: list[int]) -> Roots:
    """The largest archive generated, the smaller ones hard-linked prefixes of it."""
    t = time.monotonic()
    biggest = archive.generate(base / f"root-{sizes[-1]}", sizes[-1])
    say(
        f"archive: {biggest.notes} notes, {biggest.bytes / 1e6:.0f} MB, {biggest.exact} exact and {biggest.near} near "
        f"duplicates, {biggest.cards} paper cards, zh {biggest.zh_share:.0%}, generated in {time.monotonic() - t:.0f}s"
    )
    roots = {sizes[-1]: (base / f"root-{sizes[-1]}", biggest)}
    for n in sizes[:-1]:
        archive.link_prefix(base / f"root-{sizes[-1]}", biggest, base / f"root-{n}", n)
        size = sum((base / f"root-{n}" / r).stat().st_size for r in biggest.paths[:n])
        roots[n] = (base / f"root-{n}", archive.ArchiveStats(notes=n, files=n + 5, bytes=size))
    return roots


def _in_process(results: dict[str, Any], root: Path, paths: list[str]) -> None:
    """The stages of one note and the briefing logic's growth, in this process (no Kafka)."""
    results["stages_us_per_doc"] = st = stages.measure(root, paths[: min(600, len(paths))])
    say_stages(st)
    scaling = stages.briefing_scaling(root, paths, [100, 200, 400])
    results["briefing_scaling_s"] = {**scaling, "exponent": stages.growth_exponent(scaling)}
    say_scaling(results["briefing_scaling_s"])
    results["parse_growth_exponent"] = growth = parse_growth.measure()
    say(parse_growth.verdict(growth))


def _runs(
    results: dict[str, Any], broker: Broker, roots: Roots, base: Path, limits: dict[str, float]
) -> None:
    """Per N: bare aiokafka over the same bytes, then the end-to-end run and its briefing."""
    for n, (root, stats) in sorted(roots.items()):
        work = base / f"run-{n}"
        work.mkdir()
        bare = end_to_end.bare_kafka(broker, root, stats.files, work, str(n))
        run = end_to_end.pipeline(broker, root, stats, work, limits)
        run["bare_kafka_docs_per_s"] = bare
        run["ratio_vs_bare_kafka"] = round(run["docs_per_s"] / bare, 4)
        results["runs"][str(n)] = run
        say_run(n, run, stats.files, limits)


def _measure(results: dict[str, Any], broker: Broker, base: Path, a: argparse.Namespace) -> None:
    sizes = sorted(int(x) for x in a.n.split(","))
    limits = {"cap": a.cap, "brief": a.brief_timeout, "cut_brief": a.cut_brief_timeout}
    roots = _roots(base, sizes)
    biggest_root, biggest = roots[sizes[-1]]
    _in_process(results, biggest_root, biggest.paths)
    limits["rows_per_note"] = results["stages_us_per_doc"]["axes_per_doc"]
    near_10k = min(sizes, key=lambda n: abs(n - 10000))
    results["backfill_codecs_files_per_s"] = c = end_to_end.codecs(
        broker, roots[near_10k][0], base / "codecs"
    )
    say("backfill codecs (files/s): " + ", ".join(f"{k} {v:.0f}" for k, v in c.items()))
    _runs(results, broker, roots, base, limits)
    lat = end_to_end.steady_latency(broker, base / "latency", 20.0, a.latency_seconds)
    light = end_to_end.steady_latency(broker, base / "latency-light", 2.0, 15.0)
    results["latency_ms"], results["latency_light_ms"] = lat, light
    say_latency(lat, light)
    # Beside the results: a run writing them elsewhere leaves the checkout's profiles as they were.
    prof = profile_worker(
        broker, roots[near_10k][0], base / "profile", a.profile_seconds, a.out.parent / "profiles"
    )
    results["profile"] = {"n": near_10k, **prof}
    say(
        f"profile: worker on N={near_10k}, first {prof['seconds']:.0f}s ({prof['notes_parsed']} files parsed, "
        f"{prof['rows_stored']:.0f} rows stored) -> {prof['report']}"
    )
    results["watcher_scale"] = w = watcher_scale.measure(broker.bootstrap, base / "watcher-scale", sizes[-1])
    say_watcher(w)
    verdicts(results, say)


def main() -> None:
    a = _arguments()
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="predigest-bench-"))
    results: dict[str, Any] = {
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "targets": TARGETS,
        "cap_s": a.cap,
        "brief_timeout_s": a.brief_timeout,
        "loadavg_at_start": procs.loadavg(),
        "runs": {},
    }
    say(f"bench: {results['machine']}; load {results['loadavg_at_start']}; work folder {base}")
    broker = Broker.start(base / "kafka")
    try:
        _measure(results, broker, base, a)
    finally:
        broker.stop()
        results["loadavg_at_end"] = procs.loadavg()
        results["total_s"] = round(time.monotonic() - started, 1)
        a.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        say(f"bench: {results['total_s']:.0f}s in all; results in {a.out}")
        if "verdicts" in results:  # a run that failed halfway leaves the page as it was
            report.write_page(results, a.page)
            say(f"bench: the figures table of {a.page} rewritten from them")
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
