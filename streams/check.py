"""`predigest check`: is this configuration, root and Kafka ready to run? One row per finding, read-only."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aiokafka.admin import AIOKafkaAdminClient
from rich.console import Console
from rich.table import Table

from processors.documents import parse_document
from processors.errors import ParseError
from processors.living_doc import parse_living_doc, section_label
from processors.models import AxisSpec, Document, RawFile
from streams import kafka_io, preflight, root_files
from streams.errors import StreamsError
from streams.settings import Settings

Status = Literal["ok", "warn", "fail"]
KAFKA_TIMEOUT_SECONDS = 10.0
NOTE_FOLDERS = ("inbox", "work-queue")  # where a note's time comes from its name or front matter
SHOWN = 5  # paths named per row; the rest are counted


@dataclass(frozen=True)
class Finding:
    """One row of the check: what was looked at, how it is, and what the operator should know or do."""

    what: str
    status: Status
    detail: str


def _read(root: Path, rel: str, max_bytes: int) -> RawFile | str:
    """The file as the watcher would publish it, or why it would be refused."""
    got = root_files.read_file(root, rel, max_bytes)
    if isinstance(got, root_files.Regular) and got.data is not None:
        digest = hashlib.sha256(got.data).hexdigest()
        return RawFile(path=rel, content=got.data, size=got.size, mtime=got.mtime, sha256=digest)
    if isinstance(got, root_files.Regular):
        return f"over max_bytes ({got.size} bytes)"
    return got.detail if isinstance(got, root_files.Refused) else "not readable now"


def _parsed(settings: Settings, rel: str) -> Document | str:
    raw = _read(settings.root, rel, settings.max_bytes)
    if isinstance(raw, str):
        return raw
    try:
        return parse_document(raw, zone=settings.tz, max_bytes=settings.max_bytes)
    except ParseError as exc:
        return str(exc).removeprefix(f"{rel}: ")


def root_findings(settings: Settings) -> Iterator[Finding]:
    problem = preflight.root_problem(settings.root)
    if problem is not None:
        yield Finding(
            "root", "fail", f"{problem}: set root (--root, PREDIGEST_ROOT or root in the config file)"
        )
        return
    counts = {top: sum(1 for _ in root_files.walk(settings.root, top)) for top in preflight.TOP_FOLDERS}
    missing = [f"{top}/" for top in preflight.TOP_FOLDERS if not (settings.root / top).is_dir()]
    shown = ", ".join(f"{top}/ {n}" for top, n in counts.items())
    if "inbox/" in missing:
        yield Finding("root", "fail", f"{settings.root} has no inbox/ (writers' notes go to inbox/<writer>/)")
    elif missing:
        yield Finding("root", "warn", f"{settings.root}: no {', '.join(missing)}; file(s): {shown}")
    else:
        yield Finding("root", "ok", f"{settings.root}: file(s): {shown}")


def _named(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def note_findings(settings: Settings) -> Iterator[Finding]:
    """Notes whose time would come from their mtime (no stamp), and files the worker would reject."""
    unstamped: list[str] = []
    refused: list[str] = []
    for top in NOTE_FOLDERS:
        for entry in root_files.walk(settings.root, top):
            doc = _parsed(settings, entry.rel)
            if isinstance(doc, str):
                refused.append(f"{entry.rel} ({doc})")
            elif "no_stamp" in doc.warning_codes:
                unstamped.append(entry.rel)
    if unstamped:
        detail = (
            f"{len(unstamped)} without a date stamp (their time is the file's mtime): {_named(unstamped)}"
        )
        yield Finding("notes", "warn", detail)
    if refused:
        yield Finding("notes", "warn", f"{len(refused)} the worker would reject: {_named(refused)}")
    if not unstamped and not refused:
        yield Finding("notes", "ok", "every note has a date stamp in its name or front matter")


def living_finding(settings: Settings, axis: AxisSpec) -> Finding:
    what = f"axis {axis.name}"
    if not axis.living_doc:
        return Finding(what, "warn", "no living_doc configured: its sections show as TBD")
    if not (settings.root / axis.living_doc).is_file():
        return Finding(what, "warn", f"{axis.living_doc} not found under the root: its sections show as TBD")
    doc = _parsed(settings, axis.living_doc)
    if isinstance(doc, str):
        return Finding(what, "fail", f"{axis.living_doc} cannot be read as a living document: {doc}")
    living = parse_living_doc(doc)
    placeable = [section_label(s) for s in living.sections if s.placeable]
    version = living.version or "no version"
    sections = f"{len(living.sections)} section(s), {len(placeable)} for new material: {_named(placeable)}"
    return Finding(what, "ok", f"{axis.living_doc} {version}, {sections}")


def folder_findings(settings: Settings) -> Iterator[Finding]:
    """The folders the worker writes: each writable, or creatable under a writable parent."""
    for name in ("state_dir", "out_dir"):
        folder = Path(getattr(settings, name))
        existing = next((p for p in (folder, *folder.absolute().parents) if p.exists()), Path("/"))
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            yield Finding(name, "fail", f"{folder} cannot be written ({existing} is not a writable folder)")
        else:
            yield Finding(
                name, "ok", f"{folder} is writable" if existing == folder else f"{folder} will be created"
            )


def port_findings(settings: Settings) -> Iterator[Finding]:
    for name in ("web_port", "watcher_metrics_port"):
        port = int(getattr(settings, name))
        why = preflight.port_taken(settings.web_host, port)
        if why is None:
            yield Finding(name, "ok", f"{settings.web_host}:{port} is free")
        else:
            yield Finding(name, "fail", preflight.port_message(settings.web_host, port, name, why))


async def _reachable(settings: Settings) -> str:
    """What the broker holds of ours; BrokerUnavailableError (or a timeout) when it does not answer."""
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
    async with asyncio.timeout(KAFKA_TIMEOUT_SECONDS):
        await kafka_io.start_client(settings, admin)
    try:
        ours = [t for t in await admin.list_topics() if t.startswith(f"{settings.kafka.topic_prefix}.")]
    finally:
        await kafka_io.close_client(admin)
    return f"{len(ours)} topic(s) named {settings.kafka.topic_prefix}.*"


def kafka_finding(settings: Settings) -> Finding:
    if settings.kafka.bootstrap:
        try:
            return Finding(
                "kafka", "ok", f"{settings.kafka.bootstrap} answers; {asyncio.run(_reachable(settings))}"
            )
        except (StreamsError, TimeoutError) as exc:
            return Finding("kafka", "fail", str(exc) or f"{settings.kafka.bootstrap}: no answer in time")
    # No bootstrap: the commands start the local broker; say whether one runs now, and never start it here.
    recorded = settings.kafka_cache / "run" / "bootstrap"
    local = recorded.read_text(encoding="utf-8").strip() if recorded.is_file() else ""
    later = "no bootstrap configured: run, worker and watch start the local broker"
    if not local:
        return Finding("kafka", "warn", later)
    kafka = settings.kafka.model_copy(update={"bootstrap": local})
    try:
        held = asyncio.run(_reachable(settings.model_copy(update={"kafka": kafka})))
    except (StreamsError, TimeoutError):
        return Finding("kafka", "warn", f"{later} (none runs now)")
    return Finding("kafka", "ok", f"the local broker at {local} answers; {held}")


def findings(settings: Settings, config: Path | None) -> list[Finding]:
    source = f"{config}" if config else "defaults"
    out = [Finding("config", "ok", f"{source} and PREDIGEST_* variables: valid")]
    out += root_findings(settings)
    if preflight.root_problem(settings.root) is None:  # else the root's one row says it all
        out += note_findings(settings)
        out += [living_finding(settings, axis) for axis in settings.axes]
    out += [*folder_findings(settings), *port_findings(settings), kafka_finding(settings)]
    return out


def render(rows: list[Finding]) -> str:
    """The findings as a table (rich), in the order they were checked, and the verdict under it."""
    table = Table("CHECK", "", "DETAIL", box=None, pad_edge=False, show_edge=False)
    marks = {"ok": "ok", "warn": "WARN", "fail": "FAIL"}
    for row in rows:
        table.add_row(row.what, marks[row.status], row.detail)
    out = io.StringIO()
    Console(file=out, width=160, no_color=True, highlight=False).print(table)
    failed = sum(r.status == "fail" for r in rows)
    verdict = f"{failed} problem(s) to fix first" if failed else "all is well"
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + f"\n{verdict}"
