"""`make bench`: the end-to-end benchmark of issue 6; prints one line per figure and writes bench/results.json.

python -m bench.run [--n 1000,10000,100000] [--cap 100] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import archive, latency, procs, stages, watcher_scale
from bench.pipeline_run import bench_settings, briefing_in_process, flush_and_wait, ingest
from streams import kafka_io
from streams.backfill import backfill
from streams.kafka_local import start_broker, stop_broker
from streams.worker_process import PROJECT, stop_process

BROKER_PIDS: list[int] = []  # the broker's CPU counts as ours when telling how busy the machine was
TARGETS = {
    "docs_per_s_100k": 2000,
    "ratio_vs_bare_kafka": 0.25,
    "latency_p50_ms": 300,
    "latency_p99_ms": 2000,
    "briefing_10k_s": 2,
    "briefing_100k_s": 20,
    "worker_rss_100k_mib": 512,
    "parse_us_per_note": 400,
}


def say(line: str) -> None:
    print(line, flush=True)


def machine() -> str:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 // 1024
    return f"{os.cpu_count()} cores, {cpu}, {mem} GiB, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def bare_kafka(bootstrap: str, root: Path, n_files: int, work: Path, tag: str) -> float:
    """Files per second of a bare aiokafka producer → broker → consumer round trip of the archive's bytes."""
    settings = bench_settings(bootstrap, root, work, f"bare{tag}")
    asyncio.run(kafka_io.ensure_topics(settings))
    topic = settings.kafka.topic("raw")
    ready = work / f"bare-{tag}.ready"
    py = [sys.executable, "-m", "bench.baseline"]
    consumer = subprocess.Popen(
        [
            *py,
            "consume",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--count",
            str(n_files),
            "--ready",
            str(ready),
        ],
        stdout=subprocess.PIPE,
        cwd=PROJECT,
    )
    while not ready.exists():
        if consumer.poll() is not None:
            raise RuntimeError("bare consumer exited")
        time.sleep(0.1)
    t0 = time.time()
    subprocess.run(
        [*py, "produce", "--bootstrap", bootstrap, "--topic", topic, "--root", str(root)],
        check=True,
        cwd=PROJECT,
        stdout=subprocess.DEVNULL,
    )
    out, _ = consumer.communicate(timeout=600)
    last = json.loads(out)["last_at"]
    return round(n_files / (last - t0), 1)


def codecs(bootstrap: str, root: Path, work: Path) -> dict[str, float]:
    """Backfill files/s of the same root with each compression codec (fresh topics and ledger each)."""
    rates = {}
    for codec in ("zstd", "lz4", "gzip", "none"):
        settings = bench_settings(bootstrap, root, work / f"codec-{codec}", f"codec{codec}")
        report = asyncio.run(backfill(settings, compression=codec))
        rates[codec] = round(report.published / report.seconds, 1)
    return rates


def pipeline(
    bootstrap: str,
    root: Path,
    stats: archive.ArchiveStats,
    work: Path,
    cap_s: float,
    brief_timeout: float,
    cut_timeout: float,
) -> dict[str, Any]:
    """backfill → worker → DuckDB, then the briefing of the whole window; the worker's peak RSS throughout."""
    settings = bench_settings(bootstrap, root, work, f"n{stats.notes}")
    asyncio.run(kafka_io.ensure_topics(settings))
    rss = procs.RssWatch()
    cpu = procs.CpuMeter(extra_pids=BROKER_PIDS).start()
    worker = procs.spawn(settings, work, "worker", "worker")
    rss.watch("worker", worker.pid, children=True)
    try:
        procs.wait_log(work / "worker.log", "Ready", worker, 120)
        got = ingest(settings, work, cap_s, rss)
        rss.sample()
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
        out["rows_per_note"] = round(got.events / max(got.notes_parsed, 1), 2)
        # Cut short: the notes whose rows are all in DuckDB, from the rows stored and the parsed notes' fan-out.
        done = stats.files if got.done_s is not None else got.rows_stored / max(out["rows_per_note"], 0.01)
        out["notes_stored"] = round(done)
        out["docs_per_s"] = round(done / out["ingest_s"], 1)
        if got.done_s is not None:
            b_s, sources = asyncio.run(flush_and_wait(settings, brief_timeout))
            out.update(briefing_s=b_s, briefing_sources=sources, briefing_via="kafka flush")
    finally:
        stop_process(worker, timeout=20)
        rss.sample()
        rss.close()
    out["worker_rss_mib"] = round(rss.peaks.get("worker", 0.0), 1)
    out["parse_processes_rss_mib"] = round(rss.peaks.get("worker_children", 0.0), 1)
    if not out["complete"]:
        # The worker still had a backlog: brief what it stored, over its state file, now that it is stopped.
        b = briefing_in_process(settings, work, cut_timeout)
        out.update(
            briefing_s=b.get("briefing_s"),
            briefing_sources=b.get("briefing_sources", 0),
            briefing_via="in-process over the stored state",
        )
        out["worker_rss_mib"] = max(out["worker_rss_mib"], b["briefing_rss_mib"])
    out["others_cores"] = cpu.others_cores()
    return out


def steady_latency(bootstrap: str, work: Path, rate: float, seconds: float) -> dict[str, Any]:
    """The real watcher (default quiet period) and worker on an empty root; a writer at `rate` notes/s."""
    root = work / "root"
    latency.prepare_root(root)
    settings = bench_settings(bootstrap, root, work, "latency")
    asyncio.run(kafka_io.ensure_topics(settings))
    rss = procs.RssWatch()
    worker = procs.spawn(settings, work, "worker", "worker")
    watcher = procs.spawn(settings, work, "watcher", "watch")
    rss.watch("worker", worker.pid)
    rss.watch("watcher", watcher.pid)
    cpu = procs.CpuMeter(extra_pids=BROKER_PIDS).start()
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


def profile_worker(bootstrap: str, root: Path, work: Path, seconds: float) -> dict[str, Any]:
    """The worker under pyinstrument for the first `seconds` of ingesting `root`, rendered to bench/profiles/."""
    settings = bench_settings(bootstrap, root, work, "profile")
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
    saved = PROJECT / "bench" / "profiles"
    saved.mkdir(exist_ok=True)
    n = root.name.removeprefix("root-")
    procs.render_profile(session, saved / f"worker-{n}.txt")
    return {
        "seconds": got.elapsed_s,
        "notes_parsed": got.notes_parsed,
        "rows_stored": got.rows_stored,
        "report": f"bench/profiles/worker-{n}.txt",
    }


def _extrapolate(results: dict[str, Any], n: int) -> float | None:
    """Briefing seconds for n documents along the line through the two largest measured windows (a fixed part
    for the increments plus a cost per source); None with fewer than two (small windows are all fixed part)."""
    measured = sorted(
        (int(k), r["briefing_s"])
        for k, r in results["runs"].items()
        if r.get("complete") and r.get("briefing_s") is not None and int(k) < n
    )
    if len(measured) < 2:
        return None
    (n0, t0), (n1, t1) = measured[-2:]
    return round(t1 + max(0.0, (t1 - t0) / (n1 - n0)) * (n - n1), 1)


def verdicts(results: dict[str, Any]) -> None:
    """One line per target of issue 6; a figure from a run cut short (or a timed-out briefing) is not a pass."""
    runs, lat = results["runs"], results.get("latency_ms", {})
    big_n = max(runs, key=int)
    big = runs[big_n]

    def brief(n: str) -> tuple[Any, bool]:
        run = runs.get(n)
        if run is None:
            return None, False
        full = run["complete"] and run.get("briefing_s") is not None
        if full:
            return run.get("briefing_s"), True
        guess = _extrapolate(results, int(n))
        return (None if guess is None else f"~{guess} (extrapolated)"), False

    b10, b10_ok = brief("10000")
    b100, b100_ok = brief("100000")
    checks = [
        (f"end-to-end docs/s at N={big_n}", big["docs_per_s"], ">=", TARGETS["docs_per_s_100k"], True),
        (
            f"ratio vs bare aiokafka at N={big_n}",
            big["ratio_vs_bare_kafka"],
            ">=",
            TARGETS["ratio_vs_bare_kafka"],
            True,
        ),
        ("latency p50 ms", lat.get("p50"), "<=", TARGETS["latency_p50_ms"], True),
        ("latency p99 ms", lat.get("p99"), "<=", TARGETS["latency_p99_ms"], True),
        ("briefing s at 10k", b10, "<=", TARGETS["briefing_10k_s"], b10_ok),
        ("briefing s at 100k", b100, "<=", TARGETS["briefing_100k_s"], b100_ok),
        (
            f"worker peak RSS MiB at N={big_n}",
            big["worker_rss_mib"],
            "<=",
            TARGETS["worker_rss_100k_mib"],
            big["complete"],
        ),
        (
            "parse_document µs per note, in process",
            results.get("stages_us_per_doc", {}).get("parse"),
            "<=",
            TARGETS["parse_us_per_note"],
            "stages_us_per_doc" in results,
        ),
    ]
    results["verdicts"] = {}
    for name, value, op, target, measured in checks:
        met = measured and value is not None and (value >= target if op == ">=" else value <= target)
        note = "" if measured else " [not measured at that size: run cut short]"
        results["verdicts"][name] = {
            "value": value,
            "target": f"{op} {target}",
            "met": met,
            "measured": measured,
        }
        say(f"target {name}: {value} (target {op} {target}): {'MET' if met else 'MISSED'}{note}")


def say_watcher(w: dict[str, Any]) -> None:
    """The watcher's lines (issue 15 item 7): first start, restart, rescans of unchanged files, latency meanwhile."""
    n = w["files"]
    say(
        f"watcher: first start over {n} new small files: {w['first_start_s']}s to publish them all "
        f"(CPU {w['first_start_cpu_s']}s); restart over them unchanged: {w['restart_s']}s"
    )
    say(
        f"watcher rescan of {n} unchanged files: changed-folder pass {w.get('rescan_changed_folders_s')}s "
        f"(CPU {w.get('rescan_changed_folders_cpu_s')}s), full pass (every 10th) {w.get('rescan_full_s')}s "
        f"(CPU {w.get('rescan_full_cpu_s')}s); the watcher used {w['idle_cpu_s']}s of CPU over {w['idle_s']:.0f}s "
        f"idle with a rescan every 3 s ({w['idle_cores']:.1%} of a core)"
    )
    lat = w["note_latency_during_full_rescans_s"]
    say(
        f"watcher: a note renamed into place while full rescans of {n} files ran back to back "
        f"({lat['full_rescans_meanwhile']} of ~{lat['full_rescan_s']}s): p50 {lat['p50']}s, max {lat['max']}s "
        f"to Kafka ({lat['notes']} notes)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", default=os.environ.get("N", "1000,10000,100000"))
    p.add_argument(
        "--cap", type=float, default=100.0, help="seconds an ingest may take before it is cut short"
    )
    p.add_argument("--brief-timeout", type=float, default=90.0, help="seconds a flush may take")
    p.add_argument("--cut-brief-timeout", type=float, default=45.0, help="the same after a cut-short ingest")
    p.add_argument("--latency-seconds", type=float, default=30.0)
    p.add_argument("--profile-seconds", type=float, default=45.0)
    p.add_argument("--out", type=Path, default=PROJECT / "bench" / "results.json")
    p.add_argument("--keep", action="store_true", help="keep the work folder (archives, logs, profiles)")
    a = p.parse_args()
    sizes = sorted(int(x) for x in a.n.split(","))
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="predigest-bench-"))
    results: dict[str, Any] = {
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "targets": TARGETS,
        "loadavg_at_start": procs.loadavg(),
        "runs": {},
    }
    say(f"bench: {results['machine']}; load {results['loadavg_at_start']}; work folder {base}")
    kafka_data = base / "kafka"
    bootstrap = start_broker(PROJECT / ".cache" / "kafka", kafka_data)
    BROKER_PIDS.append(int((kafka_data / "kafka.pid").read_text()))
    try:
        t = time.monotonic()
        biggest = archive.generate(base / f"root-{sizes[-1]}", sizes[-1])
        say(
            f"archive: {biggest.notes} notes, {biggest.bytes / 1e6:.0f} MB, {biggest.exact} exact and {biggest.near} near duplicates, "
            f"{biggest.cards} paper cards, zh {biggest.zh_share:.0%}, generated in {time.monotonic() - t:.0f}s"
        )
        roots = {sizes[-1]: (base / f"root-{sizes[-1]}", biggest)}
        for n in sizes[:-1]:
            archive.link_prefix(base / f"root-{sizes[-1]}", biggest, base / f"root-{n}", n)
            roots[n] = (
                base / f"root-{n}",
                archive.ArchiveStats(
                    notes=n,
                    files=n + 5,
                    bytes=sum((base / f"root-{n}" / r).stat().st_size for r in biggest.paths[:n]),
                ),
            )

        sample = biggest.paths[: min(600, biggest.notes)]
        st = stages.measure(roots[sizes[-1]][0], sample)
        results["stages_us_per_doc"] = st
        per_record = ("duckdb", "duckdb_batch", "event_json_decode", "event_v2_decode")
        for k in (
            "read_hash",
            "parse",
            "parse_python",
            "read_note",
            "read_note_python",
            "assign_axes",
            "duckdb",
            "duckdb_batch",
            "event_json_encode",
            "event_v2_encode",
            "event_json_decode",
            "event_v2_decode",
        ):
            say(f"stage {k}: {st[k]:.0f} µs per {'record' if k in per_record else 'note'}")
        say(
            f"stage record bytes: v1 {st['event_json_bytes']}, v2 {st['event_v2_bytes']}; file {st['file_bytes']}"
        )
        say(
            f"stage duckdb row at a time vs batches of {stages.BATCH}: {st['duckdb'] / max(st['duckdb_batch'], 0.1):.0f}x; {st['axes_per_doc']} rows per document"
        )

        scaling = stages.briefing_scaling(roots[sizes[-1]][0], biggest.paths, [100, 200, 400])
        results["briefing_scaling_s"] = {**scaling, "exponent": stages.growth_exponent(scaling)}
        say(
            "briefing logic in process: "
            + ", ".join(f"{k} docs {v:.1f}s" for k, v in scaling.items())
            + f"; grows as n^{results['briefing_scaling_s']['exponent']}"
        )

        codec_root = roots[min(sizes, key=lambda n: abs(n - 10000))][0]
        results["backfill_codecs_files_per_s"] = c = codecs(bootstrap, codec_root, base / "codecs")
        say("backfill codecs (files/s): " + ", ".join(f"{k} {v:.0f}" for k, v in c.items()))

        for n in sizes:
            root, stats = roots[n]
            work = base / f"run-{n}"
            work.mkdir()
            bare = bare_kafka(bootstrap, root, stats.files, work, str(n))
            run = pipeline(bootstrap, root, stats, work, a.cap, a.brief_timeout, a.cut_brief_timeout)
            run["bare_kafka_docs_per_s"] = bare
            run["ratio_vs_bare_kafka"] = round(run["docs_per_s"] / bare, 4)
            results["runs"][str(n)] = run
            cut = (
                ""
                if run["complete"]
                else f" (CUT at {a.cap:.0f}s: {run['notes_parsed']} of {stats.files} files parsed, ~{run['notes_stored']} stored)"
            )
            say(
                f"N={n}: {run['docs_per_s']:.0f} docs/s end to end{cut}; bare aiokafka {bare:.0f}/s; ratio {run['ratio_vs_bare_kafka']:.3f}"
            )
            say(
                f"N={n}: backfill publish {run['backfill_files_per_s']:.0f} files/s, peak RSS {run['backfill_rss_mib']:.0f} MiB"
            )
            brief = "timed out" if run.get("briefing_s") is None else f"{run['briefing_s']:.1f}s"
            say(
                f"N={n}: briefing of {run.get('briefing_sources', 0)} documents: {brief} ({run.get('briefing_via')}; timeout {a.brief_timeout if run['complete'] else a.cut_brief_timeout:.0f}s)"
            )
            say(
                f"N={n}: worker peak RSS {run['worker_rss_mib']:.0f} MiB (its parse processes {run['parse_processes_rss_mib']:.0f} MiB together); other processes used {run['others_cores']} cores meanwhile"
            )

        results["latency_ms"] = lat = steady_latency(bootstrap, base / "latency", 20.0, a.latency_seconds)
        say(
            f"latency at {lat['rate_per_s']:.0f} notes/s via the watcher (quiet {lat['quiet_seconds']}s): p50 {lat.get('p50')} ms, "
            f"p99 {lat.get('p99')} ms, {lat['stored']}/{lat['notes']} stored; watcher RSS {lat['watcher_rss_mib']:.0f} MiB"
        )

        light = steady_latency(bootstrap, base / "latency-light", 2.0, 15.0)
        results["latency_light_ms"] = light
        say(
            f"latency at {light['rate_per_s']:.0f} notes/s (light load): p50 {light.get('p50')} ms, p99 {light.get('p99')} ms"
        )

        profile_n = min(sizes, key=lambda n: abs(n - 10000))
        prof = profile_worker(bootstrap, roots[profile_n][0], base / "profile", a.profile_seconds)
        results["profile"] = {"n": profile_n, **prof}
        say(
            f"profile: worker on N={profile_n}, first {prof['seconds']:.0f}s ({prof['notes_parsed']} files parsed, "
            f"{prof['rows_stored']:.0f} rows stored) -> {prof['report']}"
        )
        results["watcher_scale"] = w = watcher_scale.measure(bootstrap, base / "watcher-scale", sizes[-1])
        say_watcher(w)
        verdicts(results)
    finally:
        stop_broker(PROJECT / ".cache" / "kafka", kafka_data)
        results["loadavg_at_end"] = procs.loadavg()
        results["total_s"] = round(time.monotonic() - started, 1)
        a.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        say(f"bench: {results['total_s']:.0f}s in all; results in {a.out}")
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
