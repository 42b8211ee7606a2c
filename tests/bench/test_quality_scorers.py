"""The quality benchmark's scorers judge as docs/quality.md says: a wrong figure would misdirect the briefing work."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast
from zoneinfo import ZoneInfo

from bench.quality.adapter import Emitted
from bench.quality.figures import Figure, Tally, ratio_figure
from bench.quality.runner import Briefed, RootRun
from bench.quality.scoring import resolve
from bench.quality.scoring_d import label_of, stability_figures
from bench.quality.scoring_titles import summary_titles
from bench.quality.titles import judge
from bench.quality.truth import (
    DiscrepancyLabel,
    FileTruth,
    RootTruth,
    Scaffold,
    UnitTruth,
    clean_heading,
    heading_number,
)

SH = ZoneInfo("Asia/Shanghai")
TITLE = "REINFORCE++: A Simple and Efficient Approach for Aligning Large Language Models"


def test_a_title_broken_over_lines_or_differently_punctuated_is_correct() -> None:
    assert (
        judge("REINFORCE++: A Simple and Efficient Approach for Aligning Large Language\n  Models", [TITLE])
        == "correct"
    )
    assert (
        judge("reinforce++ — a simple and efficient approach for aligning large language models.", [TITLE])
        == "correct"
    )
    assert (
        judge(
            "**SnapKV: LLM Knows What You are Looking for Before Generation.**",
            ["SnapKV: LLM Knows What You are Looking for Before Generation"],
        )
        == "correct"
    )


def test_a_venue_a_fragment_or_a_method_name_is_wrong_and_an_id_alone_is_absent() -> None:
    assert (
        judge("OSDI 2024", ["Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve"])
        == "wrong"
    )
    assert (
        judge(
            "ing up to 13× speedup compared to SOTA KV retrieval methods.",
            ["FreeKV: Boosting KV Cache Retrieval for Efficient LLM Inference"],
        )
        == "wrong"
    )
    assert (
        judge(
            "MadaKV",
            [
                "MadaKV: Adaptive Modality-Perception KV Cache Eviction for Efficient Multimodal Long-Context Inference"
            ],
        )
        == "wrong"
    )
    assert (
        judge("A Predictive Cache for LLM Serving", ["InstCache: A Predictive Cache for LLM Serving"])
        == "wrong"
    )
    assert judge("2505.20334", ["Lookahead Q-Cache"]) == "absent"
    assert judge("arXiv 2505.20334v2", ["Lookahead Q-Cache"]) == "absent"


def test_a_translated_heading_is_accepted_when_the_truth_lists_it_and_compared_by_character() -> None:
    truths = ["Evolving Deeper LLM Thinking", "演化更深层次的LLM思维"]
    assert judge("演化更深层次的LLM思维", truths) == "correct"
    assert judge("演化的思维", truths) == "wrong"


def test_scaffolding_and_labels_match_by_strings() -> None:
    header = Scaffold("table_header", all=("Date", "Title", "Authors", "Venue", "Link"))
    assert header.hit("Date · Title · Authors · Venue · Link")
    assert not header.hit("Title: a paper by two authors")
    flag = DiscrepancyLabel("f", True, True, ("확인 필요", "DroidSpeak|2411.02820"), "")
    assert flag.hit("[flagged] 처리량 최대 4배 (확인 필요) (arXiv:2411.02820)")
    assert not flag.hit("[flagged] 처리량 최대 4배 (arXiv:2411.02820)")


def test_headings_are_cleaned_as_a_reader_names_them() -> None:
    assert clean_heading("1️⃣ Pruning / Evicting / Sparse") == "Pruning / Evicting / Sparse"
    assert clean_heading("📢 News") == "News"
    assert clean_heading("Systems ([©️back👆🏻](#contents))") == "Systems"
    assert clean_heading("©️ License") == "License"
    assert heading_number("3️⃣ Cross-Layer") == "§3"
    assert heading_number("12. 论文") == "§12"
    assert heading_number("[1] [Title](https://arxiv.org/abs/2509.07126)") is None


def _truth(**files: FileTruth) -> RootTruth:
    return RootTruth("t", ("inference",), {}, {f.path: f for f in files.values()}, {}, {}, (), ())


def test_a_source_ref_resolves_to_its_section_by_number_heading_or_prefix() -> None:
    units = (
        UnitTruth("", None, 0, (), (), body_chars=0),
        UnitTruth("Papers", None, 2, ("2505.20334",), ("inference",), body_chars=10),
        UnitTruth("1. REINFORCE++：一种简单高效的大型语言模型对齐方法", "§1", 3, (), (), "2501.03262", 50),
    )
    f = FileTruth("inbox/jay/n.md", "inbox", None, ("inference",), units, ())
    truth = _truth(n=f)
    assert resolve(truth, "inbox/jay/n.md#Papers")[1] == units[1]
    assert resolve(truth, "inbox/jay/n.md#§1")[1] == units[2]
    assert resolve(truth, "inbox/jay/n.md#1. REINFORCE++：一种简单高效")[1] == units[2]
    assert resolve(truth, "inbox/jay/n.md") == (f, None)
    assert resolve(truth, "inbox/jay/other.md#Papers") == (None, None)


def test_the_summary_line_is_split_into_the_increments_titles() -> None:
    md = "# x\n\n## 状态摘要\n\n- 核心新增：① arXiv 2505.13109 FreeKV: Boosting（up to 13× (a)） ② Papers\n\n## 一\n"
    assert summary_titles(md, ["FreeKV: Boosting"]) == [(["2505.13109"], "FreeKV: Boosting"), ([], "Papers")]


def test_a_required_figure_with_nothing_to_count_fails() -> None:
    assert ratio_figure("x", {"r": Tally()}, ">=0.80", "").verdict == "FAIL"
    assert Figure("y", None, "<=0", "", required=False).verdict == "n/a"
    assert Figure("z", 0, "<=0", "").verdict == "PASS"
    assert Figure("w", 0.79, ">=0.80", "").verdict == "FAIL"


def _briefed(step: int, items: list[tuple[str, str]], scenario: str = "flushes") -> Briefed:
    discrepancies: list[dict[str, Any]] = [
        {"id": d, "kind": "flagged", "subject": subject, "claims": [], "suggestion": ""}
        for d, subject in items
    ]
    end = datetime(2026, 8, 4, 20, step, tzinfo=SH)
    json = {"discrepancies": discrepancies}
    return Briefed("t", scenario, step, Emitted("inference", "flush", end, json, ""), (), frozenset(), True)


def test_a_discrepancy_renumbered_by_a_later_flush_is_unstable() -> None:
    label = DiscrepancyLabel("vllm", True, True, ("vllm", "0.6.3"), "")
    truth = RootTruth("t", ("inference",), {}, {}, {}, {}, (), (label,))
    run = RootRun(built=cast(Any, SimpleNamespace(name="t")), truth=truth)
    run.briefs = [
        _briefed(0, [("D1", "vLLM 0.6.3 vs 0.6.4"), ("D2", "待核实 A")]),
        _briefed(1, [("D3", "vLLM 0.6.3 vs 0.6.4"), ("D2", "待核实 A")]),
    ]
    flushes = stability_figures([run])[0]
    assert flushes.value == 0.5
    assert label_of(truth, run.briefs[0].json["discrepancies"][0]) is label
