"""Key points keep every figure intact; highlights and thesis come from them."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.key_points import _UNIT, NUMBER, figures, has_digit, highlights, key_points, thesis

SECTION = """来源：https://arxiv.org/html/2609.23130v1
Mooncake 把分布式 KV 持久化做成了生产系统。
- agentic 工作负载：输入 token 占服务 token 的 98.6%
- Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×；P50 TTFT 降低 46 倍
"""


def test_points_lead_with_the_opening_sentence_keep_figures_and_skip_source_lines() -> None:
    points = key_points([SECTION])
    assert points[0] == "Mooncake 把分布式 KV 持久化做成了生产系统。"
    assert any("98.6%" in p for p in points)
    assert any("1.7% 升至 92.2%" in p and "3.8×" in p for p in points)
    assert not any("https://" in p for p in points)


def test_highlights_are_short_phrases_around_striking_figures() -> None:
    found = highlights(key_points([SECTION]))
    assert "Cache hit 从 1.7% 升至 92.2%" in found
    assert "吞吐量提升 3.8×" in found


def test_figures_are_normalised_for_comparison_with_the_living_document() -> None:
    assert figures("吞吐 3.8x，命中率 1.7% → 92.2%，P99 -91.3%") == {"3.8×", "1.7%→92.2%", "-91.3%"}
    assert figures("P99 延迟") == set()  # a name with digits is not a figure


# NUMBER as first written, led by the check of the character before it (tried at every character).
_LOOKBEHIND_LED = re.compile(
    rf"(?<![A-Za-z0-9.])[-+−]?\d+(?:\.\d+)?\s*{_UNIT}?"
    r"(?:(?:\s*(?:→|->|~|–|升至|降至|提升至|到|至)\s*|-)\d+(?:\.\d+)?\s*(?:%|×|x(?![a-z])|倍)?)?",
    re.IGNORECASE,
)


@given(st.text(alphabet="0123456789１٣.-+−→~–至倍万%×xXsSmBGiK aZ\n", max_size=40))
@settings(max_examples=600)
def test_figures_are_found_where_a_number_not_inside_a_word_or_a_number_starts(text: str) -> None:
    assert [m.group(0) for m in NUMBER.finditer(text)] == [m.group(0) for m in _LOOKBEHIND_LED.finditer(text)]
    assert [m.span() for m in NUMBER.finditer(text)] == [m.span() for m in _LOOKBEHIND_LED.finditer(text)]


def test_thesis_prefers_a_sentence_that_states_the_claim() -> None:
    text = "InferenceBench 测量部署能力。\n关键发现：Agent 驱动的优化可超越人工调优基线。\n"
    assert thesis([text]).startswith("关键发现")
    assert thesis(["只有一句话。"]) == "只有一句话。"


def test_a_unit_s_points_lead_with_its_figures_then_its_opening_sentence() -> None:
    from processors.key_points import Said, point_list, thesis_of

    said = [
        Said(s)
        for s in [  # real: zh_hf_2404589803/final/2025-01-13_daily_paper.md, SCRIT's abstract, by sentence
            "尽管大型语言模型（LLMs）表现出色，但其发展面临一个关键挑战：在人类评估困难或LLMs超越人类的任务中提供有效反馈。",
            "我们引入了SCRIT（自进化批评者），一个能够实现批评能力真正自进化的框架。",
            "使用最强大的LLMs之一Qwen2.5-72B-Instruct实现，SCRIT在批评纠正和错误识别基准上实现了高达10.3%的改进。",
        ]
    ]
    points = point_list(said)
    assert points[0].endswith("高达10.3%的改进。") and points[1].startswith("尽管大型语言模型")
    assert len(points) == 2  # a sentence without a number or a figure is no point beyond the opening one
    assert thesis_of(said).startswith("尽管大型语言模型")  # `关键` marks a claim before `引入`/`提出` does
    assert thesis_of(said[1:]).startswith("使用最强大的")  # a figure, when no sentence states a claim


def test_table_rows_are_never_line_points() -> None:
    table = "| Date | Title | Venue |\n|---|---|---|\n| 2025-07-02 | RocketKV: Two-Stage KV Cache Compression | ICML 2025 |\n"
    assert key_points([table]) == []


def test_an_enumeration_mark_is_no_number() -> None:
    from processors.key_points import Said, point_list

    said = [  # real: zh_hf_2404589803/final/2025-01-15_daily_paper.md, Tarsier2's abstract, by sentence
        Said("我们介绍了Tarsier2，这是一种最先进的大型视觉语言模型（LVLM）。"),
        Said("（2）在监督微调期间进行细粒度的时间对齐；"),
        Said("（1）将预训练数据从1100万扩展到4000万视频-文本对，丰富了数据量和多样性；"),
    ]
    assert point_list(said) == [said[0].text, said[2].text]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("a 文。2٣²①⑴½Ⅻ๕🄂-") | st.characters(), max_size=40))
def test_a_number_is_any_digit_python_knows_not_only_an_ascii_one(text: str) -> None:
    # `has_digit` decides whether a sentence with `²` or `①` counts as having a number, as str.isdigit does.
    assert has_digit(text) == any(ch.isdigit() for ch in text)
