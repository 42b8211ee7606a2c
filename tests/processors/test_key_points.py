"""Key points keep every figure intact; highlights and thesis come from them."""

from processors.key_points import figures, highlights, key_points, thesis

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


def test_thesis_prefers_a_sentence_that_states_the_claim() -> None:
    text = "InferenceBench 测量部署能力。\n关键发现：Agent 驱动的优化可超越人工调优基线。\n"
    assert thesis([text]).startswith("关键发现")
    assert thesis(["只有一句话。"]) == "只有一句话。"
