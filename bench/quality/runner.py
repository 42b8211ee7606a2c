"""Run a built root through the product, day by day and flush by flush, and keep what a scorer needs.

Two scenarios per root, each with a worker state of its own:
- `days`: every day's files are written (in mtime order), then every axis is closed at the day's end; from
  day 2 on, the previous close of an axis is written back as `inbox/<writer>/<date>-<axis>-e1prep.md`
  (its baseline), as a writer instance does.
- `flushes` (roots that declare them): the day's files but the late ones, a flush, the late ones, a flush,
  and one more flush with nothing new: the same discrepancy must keep its D number across the three.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.quality.adapter import Emitted, Worker
from bench.quality.builder import Built, BuiltFile, Day, kind_of
from bench.quality.corpus import ID
from bench.quality.truth import FileTruth, RootTruth

WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Briefed:
    """One emitted briefing with the truth of its window."""

    root: str
    scenario: str  # days | flushes
    step: int  # day or flush index
    emitted: Emitted
    window_files: tuple[str, ...]  # paths of every note the briefing must account for
    anchored: frozenset[str]  # ids the living document, the baseline or an earlier briefing cites
    scored: bool  # the axis has on-axis labels in truth

    @property
    def axis(self) -> str:
        return self.emitted.axis

    @property
    def json(self) -> dict[str, Any]:
        return self.emitted.json


@dataclass
class RootRun:
    built: Built
    truth: RootTruth
    briefs: list[Briefed] = field(default_factory=list)
    routed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # path → axes (days scenario)
    files: int = 0


def cited_ids(briefing: dict[str, Any]) -> set[str]:
    """Every arXiv id a briefing lists: what the next windows count as anchored."""
    ids = set(briefing["summary"]["new_arxiv"]) | set(briefing["summary"]["continued_arxiv"])
    ids |= {a["id"] for a in briefing["arxiv"]}
    ids |= {i for inc in briefing["increments"] for i in inc["arxiv"]}
    return ids


class _Feed:
    """Writes files into a temporary root folder and hands each version to the worker, as the watcher would."""

    def __init__(self, folder: Path, worker: Worker) -> None:
        self.folder = folder
        self.worker = worker
        self.present: dict[str, FileTruth] = {}

    def write(self, path: str, content: bytes, mtime: float) -> None:
        target = self.folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        os.utime(target, (mtime, mtime))
        self.worker.write(path, target.read_bytes(), target.stat().st_mtime)

    def files(self, files: list[BuiltFile], truth: RootTruth) -> None:
        versions = sorted(
            ((v.mtime, n, f.path, v.content) for f in files for n, v in enumerate(f.versions)),
            key=lambda x: (x[0], x[2], x[1]),
        )
        for mtime, _n, path, content in versions:
            self.write(path, content, mtime)
        for f in files:
            self.present[f.path] = truth.files[f.path]


def _window_truth(feed: _Feed, axis: str, end: datetime) -> tuple[tuple[str, ...], set[str]]:
    """(notes of the window, ids of the axis's own baselines in it or just before it)."""
    start = end - WINDOW
    notes: list[str] = []
    baseline_ids: set[str] = set()
    for path, f in sorted(feed.present.items()):
        if f.kind == "living" or f.event_time is None:
            continue
        own = f.kind == "baseline" and f.baseline_axis == axis and start - WINDOW <= f.event_time < end
        if own:
            baseline_ids.update(f.ids)
        if start <= f.event_time < end or own:
            notes.append(path)
    return tuple(notes), baseline_ids


def _living_ids(run: RootRun, axis: str) -> set[str]:
    path = next((a.living_doc for a in run.built.axes if a.name == axis), None)
    f = run.truth.files.get(path) if path else None
    return set(f.ids) if f else set()


def _brief_all(
    run: RootRun,
    feed: _Feed,
    scenario: str,
    step: int,
    end: datetime,
    trigger: str,
    axes: list[str],
    earlier: dict[str, list[dict[str, Any]]],
) -> list[Briefed]:
    out = []
    for axis in axes:
        emitted = feed.worker.brief(axis, end, "close" if trigger == "close" else "flush")
        notes, baseline_ids = _window_truth(feed, axis, end)
        anchored = _living_ids(run, axis) | baseline_ids
        for b in earlier.get(axis, []):
            anchored |= cited_ids(b)
        earlier.setdefault(axis, []).append(emitted.json)
        out.append(
            Briefed(
                run.built.name,
                scenario,
                step,
                emitted,
                notes,
                frozenset(anchored),
                axis in run.truth.scored_axes,
            )
        )
    return out


def _baseline(run: RootRun, feed: _Feed, day: Day, previous: list[Briefed]) -> None:
    """Write the previous close of each axis back as the writer's `<date>-<axis>-e1prep.md` note."""
    for axis, path in day.baselines.items():
        prior = next(b for b in previous if b.axis == axis)
        content = prior.emitted.markdown.encode("utf-8")
        feed.write(path, content, (prior.emitted.end + timedelta(minutes=10)).timestamp())
        stamp = datetime.fromisoformat(path.rsplit("/", 1)[-1][:10]).replace(tzinfo=run.built.zone)
        ids = tuple(dict.fromkeys(ID.findall(content.decode("utf-8"))))
        truth = FileTruth(path, kind_of(path), stamp, (), (), ids, baseline_axis=axis)
        run.truth.files[path] = truth
        feed.present[path] = truth


def run(built: Built, folder: Path | None = None) -> RootRun:
    """Both scenarios of a root; the root's files are written under `folder` (a temporary one by default)."""
    result = RootRun(built, built.truth)
    with tempfile.TemporaryDirectory(prefix=f"quality-{built.name}-") as tmp:
        base = folder or Path(tmp)
        _days(result, base / "root")
        if built.flushes is not None:
            _flushes(result, Path(tmp) / "flushes")
    return result


def _days(result: RootRun, folder: Path) -> None:
    built = result.built
    worker = Worker(built.axes, built.zone, built.lang)
    feed = _Feed(folder, worker)
    earlier: dict[str, list[dict[str, Any]]] = {}
    previous: list[Briefed] = []
    axes = [a.name for a in built.axes]
    for n, day in enumerate(built.days):
        if day.baselines:
            _baseline(result, feed, day, previous)
        feed.files(list(day.files), result.truth)
        previous = _brief_all(result, feed, "days", n, day.end, "close", axes, earlier)
        result.briefs.extend(previous)
    result.routed = dict(worker.routed)
    result.files = len(feed.present)


def _flushes(result: RootRun, folder: Path) -> None:
    built = result.built
    assert built.flushes is not None
    plan = built.flushes
    worker = Worker(built.axes, built.zone, built.lang)
    feed = _Feed(folder, worker)
    earlier: dict[str, list[dict[str, Any]]] = {}
    for day in built.days[: plan.day]:
        feed.files(list(day.files), result.truth)
    files = list(built.days[plan.day].files)
    feed.files([f for f in files if not f.late], result.truth)
    scored = list(result.truth.scored_axes)
    for n, end in enumerate(plan.ends):
        if n == plan.late_before:
            feed.files([f for f in files if f.late], result.truth)
        result.briefs.extend(_brief_all(result, feed, "flushes", n, end, "flush", scored, earlier))
