"""Print the figures (one line each), write bench/quality.json, and leave the briefings where a human reads them."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.quality.figures import Figure
from bench.quality.runner import RootRun
from bench.quality.scoring import (
    accounting_figure,
    axis_figures,
    boilerplate_figure,
    content_figure,
    foreign_points_figure,
    section_figures,
)
from bench.quality.scoring_d import d_figures
from bench.quality.scoring_novelty import min_increments_figure, novelty_figures
from bench.quality.scoring_titles import title_figures


def all_figures(runs: list[RootRun]) -> list[Figure]:
    return [
        *title_figures(runs),
        boilerplate_figure(runs),
        content_figure(runs),
        foreign_points_figure(runs),
        min_increments_figure(runs),
        *axis_figures(runs),
        *d_figures(runs),
        *section_figures(runs),
        *novelty_figures(runs),
        accounting_figure(runs),
    ]


def counts(run: RootRun) -> dict[str, Any]:
    scored = [b for b in run.briefs if b.scenario == "days" and b.scored]
    ids = {i for f in run.truth.files.values() for i in f.ids}
    return {
        "files": run.files,
        "ids": len(ids),
        "briefings": sum(1 for b in run.briefs if b.scenario == "days"),
        "flush_briefings": sum(1 for b in run.briefs if b.scenario == "flushes"),
        "increments": sum(len(b.json["increments"]) for b in scored),
        "d_items": sum(len(b.json["discrepancies"]) for b in scored),
        "notes_routed_to_no_axis": sorted(p for p, axes in run.routed.items() if not axes),
    }


def _basename(b_end: datetime, axis: str, trigger: str, zone: Any) -> str:
    local = b_end.astimezone(zone)
    tail = f"-flush-{local:%H%M}" if trigger == "flush" else ""
    return f"{local:%Y-%m-%d}-{axis}-e1prep{tail}"


def write_outputs(run: RootRun, out: Path, root_folder: Path | None) -> Path:
    """Briefings (JSON + Markdown) per scenario and axis, the truth, and the final root, under out/<root>/."""
    base = out / run.built.name
    if base.exists():
        shutil.rmtree(base)
    for b in run.briefs:
        folder = base / b.scenario / b.axis
        folder.mkdir(parents=True, exist_ok=True)
        name = _basename(b.emitted.end, b.axis, b.emitted.trigger, run.built.zone)
        (folder / f"{name}.md").write_text(b.emitted.markdown, encoding="utf-8")
        (folder / f"{name}.json").write_text(
            json.dumps(b.json, ensure_ascii=False, indent=1), encoding="utf-8"
        )
    (base / "truth.json").write_text(
        json.dumps(run.truth.to_json(), ensure_ascii=False, indent=1), encoding="utf-8"
    )
    if root_folder is not None and root_folder.exists():
        shutil.copytree(root_folder, base / "root")
    return base


def git_commit(repo: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        )
        # The figures file itself does not make the tree dirty: it is what this run writes.
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", ".", ":!bench/quality.json"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def report(figures: list[Figure], runs: list[RootRun], seconds: float, repo: Path) -> dict[str, Any]:
    return {
        "schema": "predigest.quality/v1",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(repo),
        "run_seconds": round(seconds, 2),
        "figures": {f.name: f.to_json() for f in figures},
        "roots": {r.built.name: {"about": r.built.about, **counts(r)} for r in runs},
        "hand_labelled": {r.built.name: r.truth.hand_labelled for r in runs},
    }


def print_report(figures: list[Figure], runs: list[RootRun], seconds: float) -> None:
    for f in figures:
        print(f.line())
    print(f"run_seconds {seconds:.1f} <=60 {'PASS' if seconds <= 60 else 'FAIL'}")
    for r in runs:
        c = counts(r)
        print(
            f"root {r.built.name}: files {c['files']} ids {c['ids']} briefings {c['briefings']}+{c['flush_briefings']} flushes "
            f"increments {c['increments']} d_items {c['d_items']} routed_to_no_axis {len(c['notes_routed_to_no_axis'])}"
        )
    unlabelled = next(f for f in figures if f.name == "d_items_unlabelled")
    pending = [e for root in unlabelled.per_root.values() for e in root["examples"]]
    if pending:
        print(
            f"\n{len(pending)} D-item(s) without a label (add them to the root's *_labels.json, see docs/quality.md):"
        )
        for e in pending:
            print(f"  {e}")
