"""Novelty figures (new vs continued against the anchored ids of the truth) and the increment-count guard."""

from __future__ import annotations

from bench.quality.figures import Figure, Tally, ratio_figure
from bench.quality.runner import Briefed, RootRun
from bench.quality.scoring import closes
from bench.quality.truth import RootTruth

# ---- novelty and accounting -----------------------------------------------------------------------------


def _on_axis_ids(truth: RootTruth, b: Briefed) -> set[str]:
    ids: set[str] = set()
    for path in b.window_files:
        f = truth.files[path]
        if f.kind == "baseline":
            continue
        if b.axis in f.whole and f.kind == "paper_card":
            ids.update(f.ids)
        for u in f.units:
            if b.axis in u.axes:
                ids.update(u.ids)  # ids the note writes: a paper named by title only has none to list
    return ids - truth.suspect_ids


def novelty_figures(runs: list[RootRun]) -> list[Figure]:
    t: dict[str, dict[str, Tally]] = {k: {} for k in ("new_p", "new_r", "cont_p", "cont_r", "inc")}
    for run in runs:
        name = run.built.name
        for k in t:
            t[k][name] = Tally()
        for b in closes(run):
            bad = run.truth.suspect_ids
            new = [i for i in b.json["summary"]["new_arxiv"] if i not in bad]
            cont = [i for i in b.json["summary"]["continued_arxiv"] if i not in bad]
            wanted = _on_axis_ids(run.truth, b)
            where = f"{b.axis} {b.emitted.end:%m-%d}"
            for i in new:
                t["new_p"][name].add(
                    i not in b.anchored,
                    None if i not in b.anchored else f"{where} {i} listed new, is anchored",
                )
            for i in cont:
                t["cont_p"][name].add(
                    i in b.anchored, None if i in b.anchored else f"{where} {i} listed continued, is new"
                )
            for i in sorted(wanted):
                if i in b.anchored:
                    t["cont_r"][name].add(
                        i in cont, None if i in cont else f"{where} {i} (anchored) not listed continued"
                    )
                else:
                    t["new_r"][name].add(i in new, None if i in new else f"{where} {i} (new) not listed new")
            for inc in b.json["increments"]:
                ids = [i for i in inc["arxiv"] if i not in bad]
                if ids:
                    want = "continued" if any(i in b.anchored for i in ids) else "new"
                    t["inc"][name].add(
                        inc["novelty"] == want,
                        None
                        if inc["novelty"] == want
                        else f"{where} 增量 {inc['rank']} {ids} is {want}, said {inc['novelty']}",
                    )
    about = "ids of the window, against truth: anchored = living document ∪ baseline ∪ earlier briefings"
    return [
        ratio_figure("novelty_new_precision", t["new_p"], ">=1.00", f"listed new that are new; {about}"),
        ratio_figure("novelty_new_recall", t["new_r"], ">=1.00", "on-axis new ids of the window listed new"),
        ratio_figure(
            "novelty_continued_precision", t["cont_p"], ">=1.00", "listed continued that are anchored"
        ),
        ratio_figure(
            "novelty_continued_recall",
            t["cont_r"],
            ">=1.00",
            "on-axis anchored ids of the window listed continued",
        ),
        ratio_figure(
            "increment_novelty",
            t["inc"],
            ">=1.00",
            "increments marked new/continued rightly (continued if any id is anchored)",
        ),
    ]


def _papers_on_axis(truth: RootTruth, b: Briefed) -> set[str]:
    """The distinct papers of the window's on-axis sections that no earlier text anchors (ids or titles)."""
    papers = {i for i in _on_axis_ids(truth, b) if i not in b.anchored}
    for path in b.window_files:
        for u in truth.files[path].units:
            if b.axis in u.axes and u.paper and not u.ids and u.paper not in b.anchored:
                papers.add(u.paper)
    return papers


def min_increments_figure(runs: list[RootRun], least: int = 3) -> Figure:
    met: dict[str, Tally] = {}
    for run in runs:
        t = met[run.built.name] = Tally()
        for b in closes(run):
            need = min(least, len(_papers_on_axis(run.truth, b)))
            have = len(b.json["increments"])
            t.add(
                have >= need,
                None
                if have >= need
                else f"{b.axis} {b.emitted.end:%m-%d}: {have} increment(s), {need} wanted",
            )
    return ratio_figure(
        "increments_min_met",
        met,
        ">=1.00",
        f"briefings with at least {least} increments (or as many as the window has new on-axis papers)",
    )
