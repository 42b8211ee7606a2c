"""What `make bench` prints: the machine, then one line per figure, as the runs produce them."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from bench import stages

PER_RECORD = ("duckdb", "duckdb_batch", "event_json_decode")
STAGES = (
    "read_hash",
    "parse",
    "parse_python",
    "read_note",
    "read_note_python",
    "assign_axes",
    "duckdb",
    "duckdb_batch",
    "event_json_encode",
    "event_v3_encode",
    "event_json_decode",
    "event_v3_decode",
)


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


def say_stages(st: dict[str, float]) -> None:
    for k in STAGES:
        say(f"stage {k}: {st[k]:.0f} µs per {'record' if k in PER_RECORD else 'note'}")
    say(
        f"stage record bytes: v1 {st['event_json_bytes']}, v4 (a note's record; v5 packs a batch's) {st['event_v3_bytes']}; file {st['file_bytes']}"
    )
    ratio = st["duckdb"] / max(st["duckdb_batch"], 0.1)
    say(
        f"stage duckdb row at a time vs batches of {stages.BATCH}: {ratio:.0f}x; {st['axes_per_doc']} rows per document"
    )


def say_scaling(scaling: dict[str, Any]) -> None:
    times = ", ".join(f"{k} docs {v:.1f}s" for k, v in scaling.items() if k != "exponent")
    say(f"briefing logic in process: {times}; grows as n^{scaling['exponent']}")


def say_run(n: int, run: dict[str, Any], files: int, limits: dict[str, float]) -> None:
    """The four lines of one end-to-end run: rate and ratio, backfill, briefing, memory."""
    cut = (
        ""
        if run["complete"]
        else f" (CUT at {limits['cap']:.0f}s: {run['notes_parsed']} of {files} files parsed, ~{run['notes_stored']} stored)"
    )
    say(
        f"N={n}: {run['docs_per_s']:.0f} docs/s end to end{cut}; bare aiokafka {run['bare_kafka_docs_per_s']:.0f}/s; "
        f"ratio {run['ratio_vs_bare_kafka']:.3f}"
    )
    say(
        f"N={n}: backfill publish {run['backfill_files_per_s']:.0f} files/s, peak RSS {run['backfill_rss_mib']:.0f} MiB"
    )
    brief = "timed out" if run.get("briefing_s") is None else f"{run['briefing_s']:.1f}s"
    timeout = limits["brief"] if run["complete"] else limits["cut_brief"]
    say(
        f"N={n}: briefing of {run.get('briefing_sources', 0)} documents: {brief} ({run.get('briefing_via')}; timeout {timeout:.0f}s)"
    )
    say(
        f"N={n}: worker peak RSS {run['worker_rss_mib']:.0f} MiB (its parse processes {run['parse_processes_rss_mib']:.0f} MiB "
        f"together); other processes used {run['others_cores']} cores meanwhile"
    )


def say_latency(lat: dict[str, Any], light: dict[str, Any]) -> None:
    say(
        f"latency at {lat['rate_per_s']:.0f} notes/s via the watcher (quiet {lat['quiet_seconds']}s): p50 {lat.get('p50')} ms, "
        f"p99 {lat.get('p99')} ms, {lat['stored']}/{lat['notes']} stored; watcher RSS {lat['watcher_rss_mib']:.0f} MiB"
    )
    say(
        f"latency at {light['rate_per_s']:.0f} notes/s (light load): p50 {light.get('p50')} ms, p99 {light.get('p99')} ms"
    )


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
