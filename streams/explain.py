"""`predigest explain PATH`: what the latest briefing of each axis said about one note, and why.

Read from the briefings as written (`<out>/<axis>/*.json`), never recomputed: the score, the terms behind it,
the duplicate it was taken for, the increment it joined or the reason it yielded none are the briefing's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from processors.i18n import reason_alone
from processors.models import AxisSpec, Briefing, Rejection, SourceEntry
from processors.reasons import UNREAD_CODES
from processors.units import NoteNames, cites
from streams.errors import ConfigError
from streams.settings import Settings


@dataclass(frozen=True)
class Explanation:
    """One axis's answer: the briefing that lists the note (None when none does yet) and what it says."""

    axis: str
    briefing: Path | None
    said: dict[str, Any]


def note_path(settings: Settings, given: str) -> str:
    """The note as the briefings name it: relative to the root, with `/` separators."""
    path = Path(given)
    root = settings.root.resolve()
    candidate = path if path.is_absolute() else Path.cwd() / path
    try:
        return candidate.resolve().relative_to(root).as_posix()
    except ValueError:
        if path.is_absolute():
            raise ConfigError(
                f"{given} is not under the root {settings.root}: give a note of the root"
            ) from None
        return path.as_posix()  # a root-relative name, as a briefing lists it


def _briefings(folder: Path, rel: str) -> list[tuple[Path, Briefing]]:
    """The briefings of the folder whose text names the note (a year of them is hundreds of MB to validate)."""
    needle = json.dumps(rel, ensure_ascii=False).encode()
    out = []
    for file in sorted(folder.glob("*.json")):
        try:
            data = file.read_bytes()
            if needle in data:
                out.append((file, Briefing.model_validate_json(data)))
        except (OSError, ValidationError):
            continue  # not a briefing (or one half written by hand): the others still answer
    return out


def _said(briefing: Briefing, source: SourceEntry) -> dict[str, Any]:
    rel = source.relevance
    said: dict[str, Any] = {
        "trigger": briefing.trigger,
        "window_end": briefing.window.end.isoformat(),
        "status": source.status,
        "relevance": {"label": rel.label, "code": rel.code, "stars": rel.stars, "score": rel.score},
        "terms": list(rel.terms),
        "warnings": source.warnings,
    }
    if source.duplicate_of:
        said["duplicate_of"] = {
            "path": source.duplicate_of,
            "kind": source.duplicate_kind,
            "similarity": source.similarity,
        }
    paths = NoteNames(s.path for s in briefing.sources)
    joined = [
        {
            "rank": inc.rank,
            "title": inc.title,
            "from": [s for s in inc.sources if cites(s, source.path, paths)],
        }
        for inc in briefing.increments
        if any(cites(s, source.path, paths) for s in inc.sources)
    ]
    if joined:
        said["increments"] = joined
    for none in briefing.no_increment_sources:
        if none.path == source.path:
            said["no_increment"] = {"code": none.code, "reason": none.reason}
    for rejected in briefing.rejected:
        if rejected.path == source.path and rejected.reason_code in UNREAD_CODES:
            said["unreadable"] = rejected.reason  # its stored text did not read back: left out
        elif rejected.path == source.path:
            # A briefing written before 2026-12-07 listed a file refused since its version was stored beside that
            # version (and one fixed since its refusal beside the fix), and so does a state migrated from schema 8
            # until the path's next record (sinks.schema): which holds, only a later briefing says.
            said["also_rejected"] = {"code": rejected.reason_code, "reason": rejected.reason}
    return said


def explain_axis(settings: Settings, axis: AxisSpec, rel: str) -> Explanation:
    """The latest briefing of the axis (by window end, then generation) that lists the note: as a source, or
    among what it rejected (a note listed yesterday may be damaged today: today's briefing answers)."""
    briefings = _briefings(settings.out_dir / axis.name, rel)
    listing = [
        (b.window.end, b.generated_at, file, b, s)
        for file, b in briefings
        for s in b.sources
        if s.path == rel and s.status != "superseded"
    ]
    rejected = [
        (b.window.end, b.generated_at, file, b, r)
        for file, b in briefings
        for r in b.rejected
        if r.path == rel
    ]
    latest = max(listing, key=lambda row: (row[0], row[1]), default=None)
    turned = max(rejected, key=lambda row: (row[0], row[1]), default=None)
    if latest is None or (turned is not None and turned[:2] > latest[:2]):
        return _rejected(axis.name, turned)
    *_, file, briefing, source = latest
    return Explanation(axis.name, file, _said(briefing, source))


def _rejected(axis: str, found: tuple[datetime, datetime, Path, Briefing, Rejection] | None) -> Explanation:
    """What the briefing that lists the note among what it rejected (at the door, or damaged in the state) says
    of it; None when none does."""
    if found is None:
        return Explanation(axis, None, {})
    *_, file, briefing, rejection = found
    said = {"trigger": briefing.trigger, "window_end": briefing.window.end.isoformat()}
    return Explanation(
        axis, file, {**said, "rejected": {"code": rejection.reason_code, "reason": rejection.reason}}
    )


def explain(settings: Settings, given: str, axis: str | None) -> tuple[str, list[Explanation]]:
    rel = note_path(settings, given)
    axes = [settings.require_axis(axis)] if axis else list(settings.axes)
    return rel, [explain_axis(settings, a, rel) for a in axes]


def render(rel: str, answers: list[Explanation], settings: Settings) -> str:
    """Plain text, one block per axis, in the briefing's own words."""
    lines = [rel]
    for answer in answers:
        if answer.briefing is None:
            where = settings.out_dir / answer.axis
            lines.append(f"  {answer.axis}: no briefing in {where} lists it (not in a briefed window yet?)")
            continue
        said = answer.said
        lines.append(
            f"  {answer.axis}: {answer.briefing.name} ({said['trigger']}, window ending {said['window_end']})"
        )
        if "rejected" in said:
            why = reason_alone(rel, said["rejected"]["reason"])  # the block's first line names the path
            lines.append(f"    rejected   {why} ({said['rejected']['code']})")
            continue
        r = said["relevance"]
        terms = ", ".join(said["terms"]) or "(not recorded in this briefing)"
        lines.append(
            f"    relevance  {r['label']} ({r['code']}, {'★' * r['stars'] or '-'}, score {r['score']:.2f})"
        )
        lines.append(f"    terms      {terms}")
        if "duplicate_of" in said:
            d = said["duplicate_of"]
            similar = f", similarity {d['similarity']:.2f}" if d["similarity"] is not None else ""
            lines.append(f"    duplicate  of {d['path']} ({d['kind']}{similar})")
        for inc in said.get("increments", []):
            lines.append(f"    increment  {inc['rank']}: {inc['title']} (from {', '.join(inc['from'])})")
        if "no_increment" in said:
            n = said["no_increment"]
            lines.append(f"    no increment  {n['reason']} ({n['code']})")
        if "unreadable" in said:
            lines.append(f"    unreadable {said['unreadable']} (damaged: left out of the briefing)")
        if "also_rejected" in said:
            r = said["also_rejected"]
            lines.append(
                f"    also rejected  {r['reason']} ({r['code']}): a briefing before 2026-12-07, or of a state migrated "
                "from then until the file's next change, listed both; a later one lists it as a source or as rejected"
            )
        lines.extend(f"    warning    {w}" for w in said["warnings"])
    return "\n".join(lines)
