"""D-items against the labelled discrepancies: precision, planted recall, and the stability of D numbers.

An emitted D-item is matched to the first label whose strings all occur in its text (subject, claims and
their sources). Items no label matches are listed for a human to label (see docs/quality.md).
"""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import pairwise
from typing import Any

from bench.quality.figures import Figure, Tally, count_figure, ratio_figure
from bench.quality.runner import Briefed, RootRun
from bench.quality.titles import norm
from bench.quality.truth import DiscrepancyLabel, RootTruth


def item_text(d: dict[str, Any]) -> str:
    claims = " ".join(f"{c['text']} {c['source']}" for c in d["claims"])
    return f"[{d['kind']}] {d['subject']} {claims}"


def label_of(truth: RootTruth, d: dict[str, Any]) -> DiscrepancyLabel | None:
    text = item_text(d)
    return next((lab for lab in truth.discrepancies if lab.hit(text)), None)


def _number(d: dict[str, Any]) -> int:
    m = re.search(r"\d+", d["id"])
    return int(m.group()) if m else -1


def identity(truth: RootTruth, d: dict[str, Any]) -> str:
    """What makes two D-items the same discrepancy: its label, else its kind and normalised subject."""
    label = label_of(truth, d)
    return f"label:{label.id}" if label else f"{d['kind']}:{norm(d['subject'])}"


def d_figures(runs: list[RootRun]) -> list[Figure]:
    precision: dict[str, Tally] = {}
    unlabelled: dict[str, Tally] = {}
    recall: dict[str, Tally] = {}
    found_genuine: dict[str, list[str]] = {}
    for run in runs:
        name = run.built.name
        precision[name], unlabelled[name], recall[name] = Tally(), Tally(), Tally()
        matched: set[str] = set()
        for b in (b for b in run.briefs if b.scenario == "days" and b.scored):
            for d in b.json["discrepancies"]:
                label = label_of(run.truth, d)
                where = f"{b.axis} {b.emitted.end:%m-%d} {d['id']} [{d['kind']}]"
                if label is None:
                    claims = " | ".join(f"{c['text'][:120]} ({c['source']})" for c in d["claims"])
                    unlabelled[name].add(True, f"{where} {d['subject']} :: {claims}", keep=40)
                    continue
                matched.add(label.id)
                precision[name].add(
                    label.real, None if label.real else f"{where} {d['subject'][:80]} → not real ({label.id})"
                )
        for label in run.truth.discrepancies:
            if label.real and label.planted:
                recall[name].add(label.id in matched, None if label.id in matched else f"missed: {label.id}")
        found_genuine[name] = [
            lab.id for lab in run.truth.discrepancies if lab.real and not lab.planted and lab.id in matched
        ]
    figs = [
        ratio_figure(
            "d_items_precision",
            precision,
            ">=0.80",
            "emitted D-items matching a discrepancy labelled real, of those labelled",
        ),
        count_figure(
            "d_items_unlabelled",
            unlabelled,
            "<=0",
            "emitted D-items no label matches: label them (docs/quality.md)",
        ),
        ratio_figure(
            "d_items_planted_recall",
            recall,
            "",
            "planted real discrepancies raised as a D-item",
            {"genuine_found": found_genuine},
        ),
    ]
    return [*figs, *stability_figures(runs)]


def _numbers(truth: RootTruth, b: Briefed) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = defaultdict(list)
    for d in b.json["discrepancies"]:
        out[identity(truth, d)].append(_number(d))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def stability_figures(runs: list[RootRun]) -> list[Figure]:
    flushes: dict[str, Tally] = {}
    days: dict[str, Tally] = {}
    for run in runs:
        name = run.built.name
        flushes[name], days[name] = Tally(), Tally()
        for axis in run.truth.scored_axes:
            seq = [b for b in run.briefs if b.scenario == "flushes" and b.axis == axis]
            _flush_stability(run.truth, seq, flushes[name])
            closes = [b for b in run.briefs if b.scenario == "days" and b.axis == axis]
            for before, after in pairwise(closes):
                _day_continuity(run.truth, before, after, days[name])
    return [
        ratio_figure(
            "d_numbers_stable_flushes",
            flushes,
            ">=1.00",
            "discrepancies seen in two or more flushes of one window that keep their D number",
        ),
        ratio_figure(
            "d_numbers_continue_days",
            days,
            ">=1.00",
            "next day's D-items: a repeated discrepancy keeps its number, a new one numbers after the highest",
        ),
    ]


def _flush_stability(truth: RootTruth, seq: list[Briefed], tally: Tally) -> None:
    seen: dict[str, list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    for b in seq:
        for key, numbers in _numbers(truth, b).items():
            seen[key].append((b.step, numbers))
    for key, runs in sorted(seen.items()):
        if len(runs) >= 2:
            ok = len({n for _, n in runs}) == 1
            tally.add(
                ok,
                None
                if ok
                else f"{key}: " + ", ".join(f"flush {s}: D{'/D'.join(map(str, n))}" for s, n in runs),
            )


def _day_continuity(truth: RootTruth, before: Briefed, after: Briefed, tally: Tally) -> None:
    old = _numbers(truth, before)
    highest = max((n for ns in old.values() for n in ns), default=0)
    for key, numbers in sorted(_numbers(truth, after).items()):
        if key in old:
            ok = numbers == old[key]
            why = f"{key}: D{old[key]} on {before.emitted.end:%m-%d}, D{numbers} on {after.emitted.end:%m-%d}"
        else:
            ok = min(numbers) > highest
            why = f"{key}: new on {after.emitted.end:%m-%d} as D{numbers}, not after D{highest}"
        tally.add(ok, None if ok else why)
