"""Boilerplate is recognised by structure, with its reason; a real finding is never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from processors.boilerplate import BoilerplateReason, block_reasons, section_boilerplate
from processors.structure import SectionNode, parse_structure

CORPUS = Path(__file__).parents[1] / "corpus"
KV_LIST = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
ZH_DAILY = CORPUS / "daily_digests" / "zh_hf_2404589803" / "final" / "2025-01-08_daily_paper.md"


def only_section(markdown: str) -> SectionNode:
    (section,) = parse_structure(markdown).sections
    return section


def reason_of(markdown: str) -> BoilerplateReason | None:
    """The reason of the one block a snippet holds, read in its section."""
    (reason,) = block_reasons(only_section(markdown))
    return reason


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        # navigation and back-links
        ("[[Back]](#toc)", "navigation"),
        ("> [← Daily summary](../2026-08-04.md) · [Relationship graph](./graph.md)", "navigation"),
        ("返回目录", "navigation"),
        ("[返回首页](../README.md)", "navigation"),
        # badges and image-only blocks (the KV-cache list's header, the newsletter's word cloud)
        (
            "[![LICENSE](https://img.shields.io/github/license/October2001/Awesome-KV-Cache-Compression)]"
            "(https://github.com/October2001/Awesome-KV-Cache-Compression/blob/main/LICENSE)\n"
            "[![PR](https://img.shields.io/badge/PRs-Welcome-red)](https://github.com/x/y/pulls)",
            "badge",
        ),
        ("![关键词云图](../images/keywords_wordcloud.png)", "badge"),
        # tables of contents
        ("- [cs.HC](#cs.HC)", "toc"),
        # source-spec and methodology lines
        ("Source spec: arXiv cs.DC + cs.LG, last 24 h, keyword 'KV cache'", "source_spec"),
        ("**Sources:** Hugging Face daily papers, arXiv listing", "source_spec"),
        ("Methodology: read the abstract, keep serving papers", "source_spec"),
        ("检索范围：arXiv cs.CL / cs.LG 近 24 小时", "source_spec"),
        ("**数据来源：** Hugging Face Daily Papers", "source_spec"),
        ("출처: arXiv 신규 논문 목록", "source_spec"),
        # statistics lines (the newsletter's stats, the digest's per-paper figures)
        ("- 总论文数：15", "statistics"),
        ("**Relevance Score:** 9", "statistics"),
        ("**Read time:** 7 min", "statistics"),
        ("Total: 54", "statistics"),
        # "nothing new"
        ("No new papers on KV cache compression today.", "nothing_new"),
        ("今日未发现新的推理论文。", "nothing_new"),
        ("本周无新增。", "nothing_new"),
        ("오늘은 새 논문 없음", "nothing_new"),
        (
            "No new KV-cache paper found in today's cs.DC listing.",
            "nothing_new",
        ),  # the quality root r1, day 2
        # a writer's excluded list, by its own lead
        ("- **Excluded:** 2609.11111 (off-topic), 2609.22222 (duplicate)", "excluded"),
    ],
)
def test_boilerplate_lines(line: str, reason: str) -> None:
    assert reason_of(line) == reason


@pytest.mark.parametrize(
    "line",
    [
        # real findings that share words with boilerplate
        "**Method:** The methodology involves the integration of reinforcement learning with multiple agents.",
        "**TL;DR:** This paper discusses a methodology for summarizing clinical case documents.",
        "Total: 54% of tokens are input tokens in agentic traces",
        "Relevance Score improves from 0.61 to 0.74 with the reranker",
        "Results excluded outliers and still show a 3.8× throughput gain",
        "无新增参数，吞吐提升 3.8×",
        "The model adds no new parameters and keeps accuracy within 0.1%",
        "It needs no new training data and results stay within 0.2% of the baseline",
        "See [§3.3](#33-cache-compression) for the 20× KVTC result",
        "[**kvpress.**](https://github.com/NVIDIA/kvpress) *NVIDIA.* [![stars](https://img.shields.io/github/stars/NVIDIA/kvpress)](https://github.com/NVIDIA/kvpress)",
        "来源不明的数字：vLLM 生产 10 大坑",
        "↑ 吞吐 3.8×",
        "回到 vLLM 的调度器：chunked prefill 把 TTFT 降了 40%",
        "- [vLLM v0.30.0 release notes](https://github.com/vllm-project/vllm/releases) add MXFP8 KV",
    ],
)
def test_findings_are_not_boilerplate(line: str) -> None:
    assert reason_of(line) is None


@pytest.mark.parametrize(
    ("heading", "reason"),
    [
        ("## 📒Introduction", "boilerplate_section"),
        ("## ©️Citations", "boilerplate_section"),
        ("## 📢 News", "boilerplate_section"),
        ("## 📜 Notice", "boilerplate_section"),
        ("## License", "boilerplate_section"),
        ("## Contributing", "boilerplate_section"),
        ("## Usage", "boilerplate_section"),
        ("## Star History", "boilerplate_section"),
        ("## 致谢", "boilerplate_section"),
        ("## 라이선스", "boilerplate_section"),
        ("## Table of Contents", "toc"),
        ("### 📖Contents", "toc"),
        ("## 目录", "toc"),
        ("## 📊 今日论文统计", "statistics"),
        ("## Excluded papers", "excluded"),
        ("## 未纳入的论文", "excluded"),
        ("## 제외된 논문", "excluded"),
    ],
)
def test_boilerplate_sections(heading: str, reason: str) -> None:
    section = only_section(f"{heading}\n- [SnapKV](https://arxiv.org/abs/2404.14469): 3.6× faster decoding\n")
    assert section_boilerplate(section) == reason
    assert block_reasons(section) == [reason]


@pytest.mark.parametrize(
    "heading",
    [
        "## Introduction to KV cache compression",
        "## Usage-based pricing for inference",
        "## Contributions",
        "## Method",
        "## 📊 Evaluation",
        "## 1️⃣ Pruning / Evicting / Sparse",
        "## Key findings: what was excluded from prior benchmarks matters",
    ],
)
def test_content_sections_are_not_boilerplate(heading: str) -> None:
    section = only_section(f"{heading}\n- [SnapKV](https://arxiv.org/abs/2404.14469): 3.6× faster decoding\n")
    assert section_boilerplate(section) is None
    assert block_reasons(section) == [None]


def test_a_list_under_a_lead_in_saying_excluded_is_excluded() -> None:
    section = only_section(
        "## 筛选\n"
        "保留：\n\n- 2609.23130 llm-d × vLLM × Mooncake\n\n"
        "以下论文未纳入：\n\n- 2609.11111 室内布局生成\n- 2609.22222 自动驾驶\n\n"
        "| id | reason |\n|---|---|\n| 2609.33333 | off-topic |\n\n"
        "Kept after review:\n\n- 2607.20468 InferenceBench\n"
        "- Skipped:\n  - 2609.44444 recommender\n- 2609.06674 Detokenization Leaks\n"
    )
    kept = [b.text for b, r in zip(section.blocks, block_reasons(section), strict=True) if r is None]
    dropped = [b.text for b, r in zip(section.blocks, block_reasons(section), strict=True) if r == "excluded"]
    assert "2609.23130 llm-d × vLLM × Mooncake" in kept
    assert "2607.20468 InferenceBench" in kept and "2609.06674 Detokenization Leaks" in kept
    assert dropped == [
        "2609.11111 室内布局生成",
        "2609.22222 自动驾驶",
        "2609.33333 · off-topic",
        "2609.44444 recommender",
    ]


def test_real_roots_keep_their_papers_and_lose_their_scaffolding() -> None:
    kv = parse_structure(KV_LIST.read_text(encoding="utf-8"))
    by_heading = {s.heading: s for s in kv.sections}
    assert section_boilerplate(by_heading["News"]) == "boilerplate_section"
    pruning = next(s for s in kv.sections if s.heading.endswith("Pruning / Evicting / Sparse"))
    assert section_boilerplate(pruning) is None
    assert not any(block_reasons(pruning))  # every paper of the list is content
    assert block_reasons(kv.sections[0], whole=False).count("badge") == 2  # the logo and the badge row
    assert set(block_reasons(kv.sections[0])) == {"badge"}  # and the head as a whole, its wrappers included

    zh = parse_structure(ZH_DAILY.read_text(encoding="utf-8"))
    reasons = {s.heading: section_boilerplate(s) for s in zh.sections}
    assert reasons["今日论文统计"] == "statistics"
    assert reasons["订阅渠道"] == "boilerplate_section"
    paper = next(s for s in zh.sections if s.heading.startswith("1. REINFORCE++"))
    assert section_boilerplate(paper) is None


def test_a_badge_head_wrapped_in_empty_html_is_boilerplate() -> None:
    # The real list opens with `<div align="center">` wrappers around its logo and badge row: the wrappers say
    # nothing, so the head is all badges.
    kv = parse_structure(KV_LIST.read_text(encoding="utf-8"))
    assert kv.sections[0].level == 0
    assert section_boilerplate(kv.sections[0]) == "badge"
    head = parse_structure('<div align="center">\n\nA survey of KV cache methods, 3.6× faster.\n\n</div>\n')
    assert section_boilerplate(head.sections[0]) is None  # a wrapper around words is content
