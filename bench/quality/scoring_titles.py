"""Title figures: are the titles in 四, the increment headings, the 状态摘要 and 七 the papers' true titles?"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bench.quality.figures import Figure
from bench.quality.runner import Briefed, RootRun
from bench.quality.scoring import closes, paper_of_sources
from bench.quality.titles import judge
from bench.quality.truth import RootTruth

_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩"
_LEAD_IDS = re.compile(r"^\s*arXiv\s+(?P<ids>[\d./v]+)\s+")
_TRAILING_FIGURES = re.compile(r"[（(][^（()）]*[）)]\s*$")


def _truths(truth: RootTruth, ids: Iterable[str]) -> list[str]:
    bad = truth.suspect_ids
    return [t for i in ids if i not in bad for t in truth.titles.get(i, ())]


def _increment_truths(truth: RootTruth, inc: dict[str, Any]) -> list[str]:
    if inc["arxiv"]:
        return _truths(truth, inc["arxiv"])
    paper = paper_of_sources(truth, inc["sources"])
    return _truths(truth, [paper]) if paper else []


def _split_lead(text: str, known: Iterable[str] = ()) -> tuple[list[str], str]:
    """`arXiv 2505.13109/2508.02215 Title（figures）` → (ids, title).

    When the rest starts with one of the `known` increment titles, that is the title (figures in the
    parentheses that follow it may hold parentheses of their own).
    """
    m = _LEAD_IDS.match(text)
    ids = m.group("ids").split("/") if m else []
    rest = (text[m.end() :] if m else text).strip()
    title = next((k for k in sorted(known, key=len, reverse=True) if k and rest.startswith(k)), None)
    return ids, title if title is not None else _TRAILING_FIGURES.sub("", rest).strip()


def summary_titles(markdown: str, known: Iterable[str] = ()) -> list[tuple[list[str], str]]:
    """The increments as the 状态摘要's core line names them, in order."""
    head = markdown.split("\n## ", 2)
    summary = head[1] if len(head) > 1 else markdown
    line = next((ln for ln in summary.splitlines() if _CIRCLED[0] in ln), "")
    parts = re.split(f"[{_CIRCLED}]", line)[1:]
    known = list(known)
    return [_split_lead(p.strip(), known) for p in parts]


def _judge_into(
    tally: dict[str, int], examples: list[str], title: str, truths: list[str], where: str
) -> None:
    verdict = judge(title, truths)
    tally[verdict] += 1
    if verdict == "wrong" and len(examples) < 15:
        examples.append(f"{where}: {title[:90]!r} (true: {truths[0][:80]!r})")


def title_figures(runs: list[RootRun]) -> list[Figure]:
    places = ("listed", "headings", "summary_priorities")
    per: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in places}
    for run in runs:
        for p in places:
            per[p][run.built.name] = {"correct": 0, "wrong": 0, "absent": 0, "examples": []}
        for b in closes(run):
            _titles_of(run.truth, b, per)
    figures = []
    about = {
        "listed": "titles of the ids listed in 四 that are the paper's (of those with a known true title)",
        "headings": "increment headings that are their paper's title (increments about a known paper)",
        "summary_priorities": "titles in the 状态摘要 core line and in 七's rows that are the paper's",
    }
    wrong_total = 0
    for p in places:
        rows = per[p]
        c = sum(r["correct"] for r in rows.values())
        n = sum(r["correct"] + r["wrong"] + r["absent"] for r in rows.values())
        wrong_total += sum(r["wrong"] for r in rows.values())
        figures.append(Figure(f"title_accuracy_{p}", c / n if n else None, ">=0.95", about[p], rows))
    figures.append(
        Figure(
            "titles_wrong",
            wrong_total,
            "<=0",
            "titles present but not the paper's, anywhere (true or absent)",
        )
    )
    return figures


def _titles_of(truth: RootTruth, b: Briefed, per: dict[str, dict[str, dict[str, Any]]]) -> None:
    root = b.root
    where = f"{b.axis} {b.emitted.end:%m-%d}"
    for entry in b.json["arxiv"]:
        truths = _truths(truth, [entry["id"]])
        if truths:
            r = per["listed"][root]
            _judge_into(r, r["examples"], entry["title"], truths, f"{where} 四 {entry['id']}")
    incs = b.json["increments"]
    for inc in incs:
        truths = _increment_truths(truth, inc)
        if truths:
            r = per["headings"][root]
            _judge_into(r, r["examples"], inc["title"], truths, f"{where} 增量 {inc['rank']}")
    r = per["summary_priorities"][root]
    known = [inc["title"] for inc in incs]
    for inc, (_ids, title) in zip(incs, summary_titles(b.emitted.markdown, known), strict=False):
        truths = _increment_truths(truth, inc)
        if truths:
            _judge_into(r, r["examples"], title, truths, f"{where} 状态摘要 {inc['rank']}")
    for row in b.json["priorities"]:
        ids, title = _split_lead(row["content"], known)
        truths = _truths(truth, ids)
        if ids and truths:
            _judge_into(r, r["examples"], title, truths, f"{where} 七 {'/'.join(ids)}")
