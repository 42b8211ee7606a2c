"""`predigest status`: ask every worker's `GET /status` and merge their axes into one table (or JSON)."""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from rich.console import Console
from rich.table import Table
from rich.text import Text

from processors.i18n import Lang, rejection_label
from streams.settings import Settings

TIMEOUT_SECONDS = 10.0
COLUMNS = ("AXIS", "PART", "WORKER", "WINDOW", "DOCS", "DUPS", "REFUSED", "LAST BRIEFING", "LAG")


async def fetch(urls: list[str], token: str | None = None) -> list[dict[str, Any]]:
    """Each worker's answer; an unreachable worker becomes `{"worker": url, "error": ...}`."""
    answers: list[dict[str, Any]] = []
    # The token goes along when one is configured: a worker with web_read_token asks for it.
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, headers=headers) as http:
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


def _refused(refused: dict[str, Any] | None, zone: ZoneInfo, lang: Lang) -> str:
    """`3 (newest: a symlink, 09-27 22:20)`: the reason in the configured language, else as the worker wrote it."""
    if refused is None:  # a worker of a release before
        return "-"
    newest = refused["newest"]
    if newest is None:
        return str(refused["count"])
    why = rejection_label(newest["reason_code"], lang) or newest["reason"]
    return f"{refused['count']} (newest: {why}, {_local(newest['seen_at'], zone, '%m-%d %H:%M')})"


def _row(entry: dict[str, Any], zone: ZoneInfo, lang: Lang) -> tuple[str, ...]:
    part = "-" if entry.get("partition") is None else str(entry["partition"])
    if entry.get("worker") is None:
        return (entry["axis"], part, "(no worker answered for it)", "-", "-", "-", "-", "-", "-")
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
        _refused(entry.get("refused"), zone, lang),
        brief,
        lag_text,
    )


def _parse_lag(answers: list[dict[str, Any]], zone: ZoneInfo) -> str:
    """The raw records not parsed yet: the whole group's, so any worker's latest reading says it."""
    readings = [a["lag"] for a in answers if a.get("lag", {}).get("ok")]
    if not readings:
        return "parse lag unknown (no worker reached Kafka)"
    latest = max(readings, key=lambda r: str(r["checked_at"]))
    when = _local(latest["checked_at"], zone, "%H:%M:%S")
    return f"parse lag: {latest['parse']} raw record(s) not parsed yet (as of {when}, as the lag gauges show)"


def render(report: dict[str, Any], zone: ZoneInfo, lang: Lang) -> str:
    """A fixed-width table (rich's, plain text), reasons in `lang`; unreachable workers are listed under it."""
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1), header_style="")
    for name in COLUMNS:
        table.add_column(name, no_wrap=True, overflow="ignore")
    for entry in report["axes"]:  # plain Text: a refusal's message names a file, and `[x]` in it is no markup
        table.add_row(*(Text(cell) for cell in _row(entry, zone, lang)))
    out = io.StringIO()
    Console(file=out, width=100_000, color_system=None, highlight=False).print(table)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    lines.append(
        f"window times in {zone.key}; DUPS = exact+near in the window; LAG = records the group has not processed"
    )
    lines.append(
        "REFUSED = files whose latest record refused them (briefed as rejected): fix or remove each; "
        "--json names the newest, /browse/note?path=… says why"
    )
    lines.append(_parse_lag(report["workers"], zone))
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
