"""Triage: stars discriminate within a window, and 🔴 is kept for the few new papers that deserve it."""

from __future__ import annotations

from processors.increments import Candidate, Cluster
from processors.models import Increment
from processors.triage import MAX_HIGHEST, levels, star_ratings
from processors.units import Unit, units_of
from tests.processors.notes import brief, example_documents, note

# bench/quality/roots/r1/tom_serving_0804.md.j2 and spark_ko_0804.md.j2, as built (three items each)
TOM = note(
    "inbox/tom/2026-08-04-1410-serving-papers.md",
    "# 推理服务论文速记（2026-08-04）\n\n## 新论文\n\n"
    "1. **FreeKV: Boosting KV Cache Retrieval for Efficient LLM Inference** — Experiments demonstrate that FreeKV "
    "achieves near-lossless accuracy across various scenarios and models, delivering up to 13× speedup compared "
    "to SOTA KV retrieval methods.（arXiv:2505.13109）\n"
    "2. **CaliDrop: KV Cache Compression with Calibration** — Extensive experiments demonstrate that CaliDrop "
    "significantly improves the accuracy of existing token eviction methods.（arXiv:2507.19906）\n"
    "3. **Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing** — "
    "多轮对话状态恢复，TTFT 1.5–2.68× 降低，KV 存储 1.33–2.35× 降低（arXiv:2507.08045）\n",
)
SPARK = note(
    "inbox/spark/2026-08-04-1940-kv-weekly-ko.md",
    "# KV 캐시 주간 메모 (2026-08-04)\n\n## 새 논문\n\n"
    "- **Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing** "
    "(arXiv:2507.08045): TTFT 1.5–2.68× 단축\n",
)


def _candidate(units: list[Unit], score: float, novelty: str = "new") -> Candidate:
    ids = list(dict.fromkeys(i for u in units for i in u.primary_ids))
    cluster = Cluster(key=f"arxiv:{ids[0]}", units=units, ids=ids)
    return Candidate(
        cluster, relevance=score, novelty=novelty, adds_figures=True, substance=True, score=score
    )


def test_stars_follow_the_window_s_rank_and_a_second_writer_lifts_a_paper() -> None:
    tom = {u.primary_ids[0]: u for u in units_of(TOM, "inference", 5, 0.6)}
    (spark,) = units_of(SPARK, "inference", 5, 0.6)
    chosen = [
        _candidate([tom["2505.13109"]], 0.9),  # the window's best
        _candidate([tom["2507.19906"]], 0.7),
        _candidate([tom["2507.08045"], spark], 0.5),  # ranked last, but two writers report it
    ]
    assert star_ratings(chosen, lambda _c: False) == [5, 4, 4]
    alone = [*chosen[:2], _candidate([tom["2507.08045"]], 0.5)]
    assert star_ratings(alone, lambda _c: False) == [5, 4, 3]
    assert star_ratings(alone, lambda c: c is alone[2]) == [5, 4, 4]  # it extends a living-doc section


def test_a_continued_paper_without_new_figures_earns_nothing_for_novelty() -> None:
    (unit,) = units_of(SPARK, "inference", 5, 0.6)
    stale = _candidate([unit], 0.9, novelty="continued")
    stale = Candidate(stale.cluster, 0.9, "continued", adds_figures=False, substance=True, score=0.9)
    assert star_ratings([stale], lambda _c: False) == [4]


def _inc(rank: int, stars: int, novelty: str = "new", arxiv: tuple[str, ...] = ("2609.00001",)) -> Increment:
    return Increment(
        rank=rank, title=f"Paper {rank}", stars=stars, arxiv=list(arxiv), sources=[], urls=[], points=[],
        thesis="", credibility="", novelty=novelty, related_sections=[], suggested_sections=[],
    )  # fmt: skip


def test_red_is_for_at_most_three_new_papers_at_five_stars() -> None:
    incs = [
        _inc(1, 5),
        _inc(2, 5, novelty="continued"),  # continues an anchored id: 🟡
        _inc(3, 5, arxiv=()),  # no paper: 🟡
        _inc(4, 5),
        _inc(5, 5),
        _inc(6, 5),  # a fourth new five-star paper: 🟡
        _inc(7, 4),
        _inc(8, 3),  # 🟢
    ]
    got = levels(incs)
    assert got == ["highest", "medium", "medium", "highest", "highest", "medium", "medium", "low"]
    assert got.count("highest") == MAX_HIGHEST


def test_the_example_briefing_reads_like_the_example() -> None:
    b = brief(example_documents())
    stars = [inc.stars for inc in b.increments]
    assert stars == sorted(stars, reverse=True) and len(set(stars)) >= 2  # listed by stars, not all five
    assert sum(s == 5 for s in stars) <= len(stars) / 2
    red = [p for p in b.priorities if p.level == "highest"]
    assert 1 <= len(red) <= MAX_HIGHEST
    assert all(p.content.startswith("arXiv ") for p in red)
    assert b.priorities[-1].level == "low" and b.priorities[-1].content.startswith("D195")
