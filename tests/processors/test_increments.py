"""Increments: clustering by arXiv id or near text, ranking, the 3–8 range, card anchors."""

from processors.briefing_rules import BriefingRules, IncrementRules
from tests.processors.notes import brief, note

MOONCAKE_JAY = note(
    "inbox/jay/2026-09-27-1335-jay-stack.md",
    "# jay 推理栈\n\n## 2.4 llm-d × vLLM × Mooncake\n来源：https://arxiv.org/html/2609.23130v1\n"
    "- Mooncake KV cache 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×\n",
)
MOONCAKE_TOM = note(
    "inbox/tom/2026-09-27-1500-mooncake.md",
    "# Mooncake 复现\n\n## 复现结果\narXiv:2609.23130 的 KV cache 数字在我们的 vLLM 集群上复现：TTFT 降低 40%。\n",
)
BENCH = note(
    "inbox/jay/2026-09-27-1000-bench.md",
    "# 推理基准\n\n## InferenceBench\narXiv:2607.20468 提出 InferenceBench：coding agent 自动优化 vLLM 推理部署。\n"
    "- Claude Code 2.1.114 与 Codex CLI 0.125.0 在 vLLM / SGLang 上对比\n- 固定预算下超越人工调优 12%\n",
)
KVTC_AGAIN = note(
    "inbox/jay/2026-09-27-1100-kvtc.md",
    "# KVTC 回顾\n\n## KVTC\narXiv:2511.01815 KVTC 仍是 KV cache 压缩基线：20× 压缩。\n",
)
CSDN = note(
    "inbox/jay/2026-09-27-1620-csdn.md",
    "# CSDN 推理工程化\n\n来源：https://blog.csdn.net/x/article/details/1\n\n## vLLM 生产 10 大坑\n"
    "- vLLM 推理服务：P50 延迟 -72.4% / P99 -91.3% / GPU 利用率 65% → 92%\n- vLLM 日志磁盘爆炸与监控盲区\n",
)
CARD = note(
    "paper_cards/1417-2609-19969.md",
    '---\narxiv: "2609.19969"\ntitle: "DeepSeek-V4.1-Flash: KV Cache Compression"\nprimary: llm-infra\n'
    'anchors: {inference: "§3.3"}\ndate: 2026-09-27T10:00:00+08:00\n---\n# DeepSeek-V4.1-Flash\n'
    "- MLA + MXFP8：KV cache 内存降低 93.3%\n",
)
ALL = [MOONCAKE_JAY, MOONCAKE_TOM, BENCH, KVTC_AGAIN, CSDN, CARD]


def _by_id(b):
    return {i: inc for inc in b.increments for i in inc.arxiv}


def test_every_document_citing_one_id_is_merged_into_one_increment() -> None:
    inc = _by_id(brief(ALL))["2609.23130"]
    assert inc.sources == [
        "inbox/jay/2026-09-27-1335-jay-stack.md#§2.4",
        "inbox/tom/2026-09-27-1500-mooncake.md#复现结果",
    ]
    assert any("1.7% 升至 92.2%" in p for p in inc.points) and any("40%" in p for p in inc.points)
    assert inc.novelty == "new"
    assert "2 个来源交叉印证" in inc.credibility


def test_new_papers_rank_above_continued_ones_and_continued_without_new_figures_are_left_out() -> None:
    b = brief(ALL)
    ids = [i for inc in b.increments for i in inc.arxiv]
    assert "2511.01815" not in ids  # KVTC: the living document already cites it, with the same 20×
    assert b.summary.continued_arxiv == ["2511.01815"]
    reasons = {n.path: n.code for n in b.no_increment_sources}
    assert reasons["inbox/jay/2026-09-27-1100-kvtc.md"] == "covered"
    assert b.increments[0].novelty == "new"


def test_an_id_less_note_with_figures_becomes_an_increment_of_its_own() -> None:
    csdn = next(inc for inc in brief(ALL).increments if not inc.arxiv)
    assert csdn.title.startswith("CSDN 推理工程化")
    assert "https://blog.csdn.net/x/article/details/1" in csdn.urls
    assert csdn.credibility.startswith("★★★ — 技术社区博客")
    assert "§1.1" in csdn.suggested_sections  # the vLLM pitfalls belong with the framework landscape


def test_a_paper_card_goes_into_the_section_it_anchors_and_takes_its_title() -> None:
    inc = _by_id(brief(ALL))["2609.19969"]
    assert inc.title == "DeepSeek-V4.1-Flash: KV Cache Compression"
    assert inc.suggested_sections[0] == "§3.3"
    assert inc.suggestions[0].via == "anchor"
    assert inc.relations[0].section == "§3.3"
    assert "KVTC" in inc.relations[0].anchored


def test_the_count_stays_within_the_configured_range() -> None:
    assert len(brief(ALL, increment_range=(1, 2)).increments) == 2
    assert len(brief(ALL).increments) >= 3


def test_below_the_minimum_weaker_candidates_fill_in() -> None:
    strict = BriefingRules(increments=IncrementRules(score_share=0.99))
    assert len(brief(ALL, rules=strict).increments) == 3


def test_ids_the_window_s_earlier_briefings_cited_are_continued() -> None:
    b = brief(ALL, earlier=["2607.20468"])
    assert "2607.20468" in b.summary.continued_arxiv
    assert _by_id(b).get("2607.20468") is None or _by_id(b)["2607.20468"].novelty == "continued"


def test_a_paper_named_only_by_its_title_is_one_increment_across_notes() -> None:
    monday = note(
        "inbox/tom/2026-09-27-0900-daily.md",
        "# 论文日报\n\n### 1. 推理加速新方法\n\n**原文标题：** Fast Speculative Decoding for LLM Inference\n  at Scale\n\n"
        "推理吞吐提升 2.5×，TTFT 降低 30%。\n\n### 2. 另一篇\n\n**原文标题：** Something Else Entirely About Agents\n\n无关内容。\n",
    )
    repost = note(
        "inbox/jay/2026-09-27-1500-repost.md",
        "# 转载\n\n## 投机解码论文\n\nTitle: Fast Speculative Decoding for LLM Inference at Scale\n\nvLLM 推理上复现：吞吐 2.4×。\n",
    )
    b = brief([monday, repost, *ALL])
    (inc,) = [i for i in b.increments if i.title == "推理加速新方法"]
    assert inc.sources == [
        "inbox/tom/2026-09-27-0900-daily.md#§1",
        "inbox/jay/2026-09-27-1500-repost.md#投机解码论文",
    ]
    assert not inc.arxiv and inc.novelty == "new"


def test_each_paper_of_a_real_daily_newsletter_is_its_own_increment() -> None:
    from pathlib import Path

    path = Path(__file__).parents[1] / "corpus/daily_digests/zh_hf_2404589803/final/2025-01-09_daily_paper.md"
    day = note("inbox/tom/2026-09-27-0900-hf-daily.md", path.read_text(encoding="utf-8"))
    titles = [i.title for i in brief([day]).increments]
    assert len(titles) >= 3 and len(set(titles)) == len(titles)
    assert "rStar-Math：小型语言模型通过自我进化的深度思考掌握数学推理" in titles
    assert not any("<img" in t or "论文日报" in t for t in titles)  # the HTML logo and the digest's own title


def test_an_increment_is_headed_by_a_true_title_or_by_its_id_alone() -> None:
    venue = note(
        "inbox/jay/2026-09-27-1200-venues.md",
        "# 会议论文\n\n## OSDI 2024\narXiv:2609.31234 的调度器把 P99 TTFT 降低 35%，吞吐量提升 2.1×。\n",
    )
    titled = note(
        "inbox/jay/2026-09-27-1300-linked.md",
        "# 新论文\n\n## 调度\n1. [**SAGA: Workflow-Atomic Scheduling for AI Agent Inference.**]"
        "(https://arxiv.org/abs/2609.35555) *A. Author, B. Author.* OSDI 2024.\n"
        "   - 吞吐量提升 3.2×，P99 TTFT 降低 41%\n",
    )
    by_id = _by_id(brief([*ALL, venue, titled]))
    assert by_id["2609.31234"].title == "2609.31234"
    assert by_id["2609.35555"].title == "SAGA: Workflow-Atomic Scheduling for AI Agent Inference"


# A section led by KVTC (which the living document cites) that also names a paper nobody cites yet.
KVTC_LED = note(
    "inbox/jay/2026-09-27-1200-kvtc-vs.md",
    "# KV 压缩对比\n\n## KVTC arXiv:2511.01815 对比 arXiv:2609.30001\n"
    "KVTC 在 vLLM 推理上实测压缩从 20× 提到 24×，TTFT 降低 35%；新方法 2609.30001 只对比了 KVTC。\n",
)


def test_an_increment_led_by_an_id_the_living_document_cites_is_continued() -> None:
    b = brief([KVTC_LED, MOONCAKE_JAY], increment_range=(2, 8))
    inc = _by_id(b)["2511.01815"]
    assert inc.arxiv[0] == "2511.01815" and inc.novelty == "continued"
    status = {a.id: a.status for a in b.arxiv}
    assert (status["2511.01815"], status["2609.30001"]) == ("continued", "new")
    assert _by_id(b)["2609.23130"].novelty == "new"


def test_an_increment_led_by_an_id_the_baseline_cites_is_continued() -> None:
    baseline = note(
        "inbox/tom/2026-09-26-inference-e1prep.md", "# inference · E1\n\n| 2609.23130 | Mooncake |\n"
    )
    b = brief([baseline, MOONCAKE_JAY, MOONCAKE_TOM, BENCH])
    assert _by_id(b)["2609.23130"].novelty == "continued"
    assert "2609.23130" in b.summary.continued_arxiv and "2609.23130" not in b.summary.new_arxiv
