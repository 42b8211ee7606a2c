"""The figures of the quality benchmark, each computed from the ground truth and the emitted briefings only.

Scored briefings are the closes of the `days` scenario on the axes the root labels (`scored_axes`); the
notes-accounted figure covers every axis. D-items are scored in bench.quality.scoring_d.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.quality.corpus import ID
from bench.quality.figures import Figure, Tally, count_figure, ratio_figure
from bench.quality.runner import Briefed, RootRun
from bench.quality.titles import norm
from bench.quality.truth import FileTruth, LivingSection, RootTruth, UnitTruth, clean_heading
from processors.units import NoteNames, split_ref


def closes(run: RootRun, scored_only: bool = True) -> list[Briefed]:
    return [b for b in run.briefs if b.scenario == "days" and (b.scored or not scored_only)]


# ---- sources → truth units ------------------------------------------------------------------------------


def resolve(truth: RootTruth, ref: str) -> tuple[FileTruth | None, UnitTruth | None]:
    """The file and section a source ref (`path`, `path#§3`, `path#heading`) names; (file, None) for the whole."""
    path, frag = split_ref(ref, NoteNames(truth.files))  # per ref: baselines join the files at run time
    f = truth.files.get(path)
    if f is None or not frag:
        return f, None
    want = norm(frag)
    for test in (
        lambda u: u.number == frag.strip(),
        lambda u: norm(u.heading) == want,
        lambda u: (
            bool(want) and (norm(u.heading).startswith(want) or want.startswith(norm(u.heading) or "\0"))
        ),
    ):
        hit = next((u for u in f.units if test(u)), None)
        if hit is not None:
            return f, hit
    return f, None


def _source_axes(truth: RootTruth, ref: str, axis: str) -> bool | None:
    """Whether the source is on `axis`; None when the ref names nothing in the truth.

    A bare path is the whole of a paper card, else the text before the first heading below the title.
    """
    f, unit = resolve(truth, ref)
    if f is None:
        return None
    if "#" in ref:
        return None if unit is None else axis in unit.axes
    head = [u for u in f.units if u.level <= 1 and u.body_chars > 0]
    if f.kind == "paper_card" or not head:
        return axis in f.whole
    return all(axis in u.axes for u in head)


def paper_of_sources(truth: RootTruth, refs: Iterable[str]) -> str | None:
    papers = set()
    for ref in refs:
        f, unit = resolve(truth, ref)
        paper = unit.paper if unit is not None else None
        if paper is None and f is not None and f.kind == "paper_card" and "#" not in ref:
            paper = next((u.paper for u in f.units if u.paper), None)
        papers.add(paper)
    return papers.pop() if len(papers) == 1 else None


# ---- boilerplate, on-axis units, stars ------------------------------------------------------------------


def _items(b: Briefed) -> Iterable[tuple[str, str]]:
    for inc in b.json["increments"]:
        yield f"增量 {inc['rank']} title", inc["title"]
        yield f"增量 {inc['rank']} thesis", inc["thesis"]
        for n, point in enumerate(inc["points"], 1):
            yield f"增量 {inc['rank']} point {n}", point
    for row in b.json["priorities"]:
        yield "七 row", row["content"]


def boilerplate_figure(runs: list[RootRun]) -> Figure:
    counts: dict[str, Tally] = {}
    kinds: dict[str, int] = {}
    for run in runs:
        t = counts[run.built.name] = Tally()
        for b in closes(run):
            for where, text in _items(b):
                hit = next((s for s in run.truth.scaffolds if s.hit(text)), None)
                if hit is not None:
                    kinds[hit.kind] = kinds.get(hit.kind, 0) + 1
                    t.add(True, f"{b.axis} {b.emitted.end:%m-%d} {where} [{hit.kind}]: {text[:100]!r}")
    fig = count_figure(
        "boilerplate_items",
        counts,
        "<=0",
        "increment titles, theses, key points and 七 rows that are scaffolding",
    )
    fig.detail = {"by_kind": kinds}
    return fig


def _window_titles(truth: RootTruth, b: Briefed) -> dict[str, list[str]]:
    """Normalised full titles (four words or more) of the window's papers, by id."""
    out: dict[str, list[str]] = {}
    for path in b.window_files:
        for i in truth.files[path].ids:
            out[i] = [n for t in truth.titles.get(i, ()) if len((n := norm(t)).split()) >= 4]
    return out


def foreign_points_figure(runs: list[RootRun]) -> Figure:
    """Key points of a paper's increment that are about another paper: a list's neighbouring items bleeding in."""
    counts: dict[str, Tally] = {}
    for run in runs:
        t = counts[run.built.name] = Tally()
        for b in closes(run):
            titles = _window_titles(run.truth, b)
            for inc in b.json["increments"]:
                own = set(inc["arxiv"])
                if not own:
                    continue
                for point in inc["points"]:
                    text = norm(point)
                    other = {i for i in ID.findall(point) if i not in own} or {
                        i for i, ts in titles.items() if i not in own and any(x in text for x in ts)
                    }
                    if other:
                        t.add(
                            True,
                            f"{b.axis} {b.emitted.end:%m-%d} 增量 {inc['rank']} {sorted(own)}: point about {sorted(other)}: {point[:80]!r}",
                        )
    return count_figure(
        "points_of_other_papers",
        counts,
        "<=0",
        "key points of a paper's increment that name another paper of the window",
    )


def content_figure(runs: list[RootRun]) -> Figure:
    """Increments that say something: at least one key point that is not scaffolding (an empty increment
    would otherwise pass the scaffolding count by saying nothing)."""
    said: dict[str, Tally] = {}
    for run in runs:
        t = said[run.built.name] = Tally()
        for b in closes(run):
            for inc in b.json["increments"]:
                real = [p for p in inc["points"] if not any(s.hit(p) for s in run.truth.scaffolds)]
                t.add(
                    bool(real),
                    None
                    if real
                    else f"{b.axis} {b.emitted.end:%m-%d} 增量 {inc['rank']}: {inc['points'][:2]}",
                )
    return ratio_figure(
        "increments_with_content",
        said,
        ">=1.00",
        "increments with at least one key point that is not scaffolding",
    )


def axis_figures(runs: list[RootRun]) -> list[Figure]:
    on: dict[str, Tally] = {}
    five: dict[str, Tally] = {}
    red: dict[str, list[int]] = {}
    unresolved: list[str] = []
    for run in runs:
        name = run.built.name
        on[name], five[name], red[name] = Tally(), Tally(), []
        for b in closes(run):
            for inc in b.json["increments"]:
                axes = [_source_axes(run.truth, ref, b.axis) for ref in inc["sources"]]
                unresolved += [ref for ref, a in zip(inc["sources"], axes, strict=True) if a is None]
                ok = bool(axes) and all(a is True for a in axes)
                on[name].add(
                    ok, None if ok else f"{b.axis} {b.emitted.end:%m-%d} 增量 {inc['rank']}: {inc['sources']}"
                )
                five[name].add(inc["stars"] == 5)
            red[name].append(sum(1 for p in b.json["priorities"] if p["level"] == "highest"))
    all_red = [n for v in red.values() for n in v]
    return [
        ratio_figure(
            "increments_on_axis",
            on,
            ">=0.80",
            "increments whose every source is a section labelled on the axis",
            {"unresolved_sources": sorted(set(unresolved))[:20]},
        ),
        ratio_figure(
            "increments_five_stars",
            five,
            "<=0.50",
            "share of increments at ⭐⭐⭐⭐⭐ (stars must discriminate)",
        ),
        Figure(
            "red_rows_max",
            max(all_red, default=0),
            "<=3",
            "most 🔴 rows in one briefing's 七",
            {r: {"per_briefing": v} for r, v in red.items()},
        ),
    ]


# ---- living-document sections ---------------------------------------------------------------------------


def _section(
    sections: tuple[LivingSection, ...], label: str, title: str, labels: dict[str, str]
) -> LivingSection | None:
    names = {
        clean_heading(title).lower(),
        clean_heading(labels.get(label, "")).lower(),
        clean_heading(label).lower(),
    }
    names.discard("")
    hit = next((s for s in sections if s.name.lower() in names), None)
    if hit is None and not names and label.strip() == "":
        return next((s for s in sections if s.name == ""), None)
    return hit


def section_figures(runs: list[RootRun]) -> list[Figure]:
    boiler: dict[str, Tally] = {}
    fitting: dict[str, Tally] = {}
    abstained: dict[str, Tally] = {}
    for run in runs:
        name = run.built.name
        boiler[name], fitting[name], abstained[name] = Tally(), Tally(), Tally()
        for b in closes(run):
            sections = run.truth.living.get(b.axis)
            if not sections:
                continue
            labels = b.json["living_doc"].get("sections", {})
            for inc in b.json["increments"]:
                _score_suggestions(
                    run.truth, b, inc, sections, labels, boiler[name], fitting[name], abstained[name]
                )
    return [
        count_figure(
            "suggestions_into_boilerplate", boiler, "<=0", "section suggestions into boilerplate sections"
        ),
        ratio_figure(
            "suggestions_fitting",
            fitting,
            ">=0.80",
            "suggestions into a section the truth says fits the increment's papers (of increments with fits labelled)",
            {"no_fit_and_no_suggestion": {r: t.hits for r, t in abstained.items()}},
        ),
    ]


def _score_suggestions(
    truth: RootTruth,
    b: Briefed,
    inc: dict[str, Any],
    sections: tuple[LivingSection, ...],
    labels: dict[str, str],
    boiler: Tally,
    fitting: Tally,
    abstained: Tally,
) -> None:
    ids = [i for i in inc["arxiv"] if i not in truth.suspect_ids and i in truth.fits]
    fits = {s for i in ids for s in truth.fits[i]}
    where = f"{b.axis} {b.emitted.end:%m-%d} 增量 {inc['rank']}"
    suggestions = inc.get("suggestions") or [{"section": s, "title": ""} for s in inc["suggested_sections"]]
    if ids and not fits and not suggestions:
        abstained.add(True)
    for s in suggestions:
        sec = _section(sections, s["section"], s.get("title", ""), labels)
        if sec is not None and sec.boilerplate:
            boiler.add(True, f"{where} → {s['section']} {s.get('title', '')}")
        if ids:
            ok = sec is not None and sec.name in fits
            fitting.add(
                ok,
                None
                if ok
                else f"{where} {ids} → {s['section']} {s.get('title', '')} (fits: {sorted(fits) or 'none'})",
            )


# ---- accounting ---------------------------------------------------------------------------------------


def accounting_figure(runs: list[RootRun]) -> Figure:
    missing: dict[str, Tally] = {}
    for run in runs:
        t = missing[run.built.name] = Tally()
        for b in closes(run, scored_only=False):
            seen = {s["path"] for s in b.json["sources"]} | {
                n["path"] for n in b.json["no_increment_sources"]
            }
            for path in b.window_files:
                if path not in seen:
                    t.add(True, f"{b.axis} {b.emitted.end:%m-%d}: {path}")
    return count_figure(
        "notes_missing", missing, "<=0", "notes of a window absent from that axis's 一/五/六 (every axis)"
    )
