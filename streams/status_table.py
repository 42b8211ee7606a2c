"""`predigest status`: ask every worker's `GET /status` and merge their axes into one table (or JSON)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from streams.settings import Settings

TIMEOUT_SECONDS = 10.0
COLUMNS = ("AXIS", "PART", "WORKER", "WINDOW", "DOCS", "DUPS", "LAST BRIEFING", "LAG")


async def fetch(urls: list[str]) -> list[dict[str, Any]]:
    """Each worker's answer; an unreachable worker becomes `{"worker": url, "error": ...}`."""
    answers: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as http:
        for url in urls:
            try:
                response = await http.get(url.rstrip("/") + "/status")
                response.raise_for_status()
                body: dict[str, Any] = response.json()
                body["worker"] = url
                answers.append(body)
            except (httpx.HTTPError, ValueError) as exc:
                answers.append({"worker": url, "error": str(exc) or type(exc).__name__})
    return answers


def merge(settings: Settings, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per configured axis: the worker that owns it, or none (nobody answered for it)."""
    rows: dict[str, dict[str, Any]] = {}
    for answer in answers:
        for entry in answer.get("axes", []):
            rows.setdefault(entry["axis"], {**entry, "worker": answer["worker"]})
    partitions: dict[str, int] = {}
    for answer in answers:
        partitions.update(answer.get("axis_partitions", {}))
    axes = [
        rows.get(a.name, {"axis": a.name, "partition": partitions.get(a.name), "worker": None})
        for a in settings.axes
    ]
    return {"axes": axes, "workers": answers}


def _local(text: str | None, zone: ZoneInfo, fmt: str) -> str:
    return datetime.fromisoformat(text).astimezone(zone).strftime(fmt) if text else "-"


def _row(entry: dict[str, Any], zone: ZoneInfo) -> tuple[str, ...]:
    part = "-" if entry.get("partition") is None else str(entry["partition"])
    if entry.get("worker") is None:
        return (entry["axis"], part, "(no worker answered for it)", "-", "-", "-", "-", "-")
    window = entry["window"]
    span = f"{_local(window['start'], zone, '%m-%d %H:%M')} → {_local(window['end'], zone, '%m-%d %H:%M')}"
    dups = entry["duplicates"]
    last = entry.get("last_briefing")
    brief = (
        f"{_local(last['window_end'], zone, '%Y-%m-%d %H:%M')} {last['trigger']}"
        f" ({last['sources']} src, {last['increments']} inc)"
        if last
        else "none yet"
    )
    lag = entry.get("lag")
    lag_text = f"docs {lag['documents']} / ctl {lag['control']}" if lag else "unknown"
    if not entry.get("ready", True):
        lag_text += " (catching up)"
    docs = str(entry["documents"])
    return (
        entry["axis"],
        part,
        entry["worker"],
        span,
        docs,
        f"{dups['exact']}+{dups['near']}",
        brief,
        lag_text,
    )


def render(report: dict[str, Any], zone: ZoneInfo) -> str:
    """A fixed-width table; unreachable workers are listed under it."""
    rows = [COLUMNS, *(_row(e, zone) for e in report["axes"])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(
        f"window times in {zone.key}; DUPS = exact+near in the window; LAG = records not yet applied"
    )
    for answer in report["workers"]:
        if "error" in answer:
            lines.append(f"worker {answer['worker']} did not answer: {answer['error']}")
        for axis, f in sorted(answer.get("briefing_failures", {}).items()):
            lines.append(
                f"briefings of {axis} cannot be written on {answer['worker']} ({f['reason']}): {f['pending']} "
                f"waiting, {f['attempts']} attempt(s) since {_local(f['since'], zone, '%m-%d %H:%M')}, next in "
                f"{f['next_attempt_in_seconds']:.0f} s: {f['error']}"
            )
    return "\n".join(lines)
