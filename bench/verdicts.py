"""The benchmark's targets (issues 6 and 14) and the verdict on each: MET, MISSED, or not measured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def extrapolate(results: dict[str, Any], n: int) -> float | None:
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


def _briefing(results: dict[str, Any], n: str) -> tuple[Any, bool]:
    """A run's briefing seconds and whether they were measured: a complete run's flush that timed out was
    (it took longer than the timeout); after a cut run, the extrapolation, marked as such."""
    run = results["runs"].get(n)
    if run is None:
        return None, False
    if run["complete"] and run.get("briefing_s") is not None:
        return run.get("briefing_s"), True
    if run["complete"]:
        return f"> {results.get('brief_timeout_s', '?')} (timed out)", True
    guess = extrapolate(results, int(n))
    return (None if guess is None else f"~{guess} (extrapolated)"), False


def _checks(results: dict[str, Any]) -> list[tuple[str, Any, str, float, bool]]:
    """(name, value, comparison, target, measured) of every target, in the order they are printed."""
    runs, lat = results["runs"], results.get("latency_ms", {})
    big_n = max(runs, key=int)
    big = runs[big_n]
    b10, b10_ok = _briefing(results, "10000")
    b100, b100_ok = _briefing(results, "100000")
    measured_parse = "stages_us_per_doc" in results
    return [
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
            measured_parse,
        ),
    ]


def verdicts(results: dict[str, Any], say: Callable[[str], None]) -> None:
    """One line per target into `results["verdicts"]` and said; a figure from a run cut short is not a pass."""
    results["verdicts"] = {}
    for name, value, op, target, measured in _checks(results):
        number = isinstance(value, int | float)
        met = measured and number and (value >= target if op == ">=" else value <= target)
        note = "" if measured else " [not measured: no run of that size, or cut short]"
        results["verdicts"][name] = {
            "value": value,
            "target": f"{op} {target}",
            "met": met,
            "measured": measured,
        }
        say(f"target {name}: {value} (target {op} {target}): {'MET' if met else 'MISSED'}{note}")
