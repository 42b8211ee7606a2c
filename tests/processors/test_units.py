"""A section names its paper by an `原文标题：` line when it carries no id."""

from __future__ import annotations

from pathlib import Path

from processors.structure import parse_structure
from processors.units import paper_title

ZH_DAILY = Path(__file__).parents[1] / "corpus" / "daily_digests" / "zh_hf_2404589803" / "final"


def test_paper_title_joins_a_title_wrapped_onto_the_next_line() -> None:
    body = (ZH_DAILY / "2025-01-08_daily_paper.md").read_text(encoding="utf-8")
    section = next(s for s in parse_structure(body).sections if s.heading.startswith("1. REINFORCE++"))
    assert (
        paper_title(section.text)
        == "REINFORCE++: A Simple and Efficient Approach for Aligning Large Language Models"
    )


def test_paper_title_is_absent_when_the_line_names_no_title() -> None:
    assert paper_title("**原文标题：** NeurIPS 2025 Spotlight\n\n正文") == ""
    assert paper_title("**摘要：** 没有标题行") == ""
    assert paper_title("Title: Kimi k1.5: Scaling Reinforcement Learning with LLMs") == (
        "Kimi k1.5: Scaling Reinforcement Learning with LLMs"
    )
