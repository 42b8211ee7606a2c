"""The Markdown structure of real notes: sections from the parser's headings, blocks with text, links, leads."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.parse_growth import STRUCTURE_UNITS
from processors.structure import Block, parse_structure

CORPUS = Path(__file__).parents[1] / "corpus"
KV_LIST = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
ZH_DAILY = CORPUS / "daily_digests" / "zh_hf_2404589803" / "final"
EXAMPLES = Path(__file__).parents[2] / "examples" / "root"


def test_sections_split_on_real_headings_only() -> None:
    body = (
        "intro\n# Title\nSetext heading\n--------------\ntext\n"
        "```\n# not a heading\n```\n    # indented code, not a heading\n> # quoted heading is a block\n## Last ##\n"
    )
    s = parse_structure(body)
    assert [(x.level, x.heading) for x in s.sections] == [
        (0, ""),
        (1, "Title"),
        (2, "Setext heading"),
        (2, "Last"),
    ]
    setext = s.sections[2]
    assert [b.kind for b in setext.blocks] == ["paragraph", "code", "code", "heading"]
    assert setext.blocks[3].quoted and setext.blocks[3].text == "quoted heading is a block"
    assert setext.blocks[1].text == ""  # code is never content


def test_section_text_is_an_exact_slice_of_the_body() -> None:
    for path in [KV_LIST, *sorted(ZH_DAILY.glob("*.md"))[:3], *sorted(EXAMPLES.rglob("*.md"))]:
        body = path.read_text(encoding="utf-8")
        for section in parse_structure(body).sections:
            assert body[section.start : section.end] == section.text, (path.name, section.heading)
            assert section.text == section.text.strip("\r\n")


@pytest.mark.parametrize(
    ("heading", "number"),
    [
        ("§3.3 Cache Compression", "§3.3"),
        ("附录 §5.1 extra", "§5.1"),
        ("2.4 Dell KV Cache 综述", "§2.4"),
        ("2.4. Plain number", "§2.4"),
        ("1️⃣ Pruning / Evicting / Sparse", None),
        ("2024 roadmap", None),
        ("vLLM 0.3.3 production", None),
        ("[1] A Contextual Bandits Approach", None),
    ],
)
def test_section_numbers(heading: str, number: str | None) -> None:
    assert parse_structure(f"## {heading}\n\ntext\n").sections[0].number == number


def test_headings_are_cleaned_of_emoji_badges_and_back_links() -> None:
    body = (
        "## 📒Introduction\n"
        "### 📖LLM Train/Inference Framework ([©️back👆🏻](#paperlist))\n"  # DefTruth/Awesome-LLM-Inference
        "## cs.HC [[Back]](#toc)\n"  # zl-asica daily digest
        '# <img src="https://huggingface.co/hf-logo.png" width="30"/> Hugging Face 2025-01-23 论文日报\n'
        "### [1] [A Contextual Bandits Approach](https://arxiv.org/abs/2509.08915)\n"
        "### 1️⃣ Pruning / Evicting / Sparse\n"
        "## [Contents](#toc)\n"
    )
    headings = [s.heading for s in parse_structure(body).sections]
    assert headings == [
        "Introduction",
        "LLM Train/Inference Framework",
        "cs.HC",
        "Hugging Face 2025-01-23 论文日报",
        "[1] A Contextual Bandits Approach",
        "Pruning / Evicting / Sparse",
        "Contents",  # a heading that is only a link keeps its text
    ]
    assert parse_structure("## Systems (©️back👆🏻)\n").sections[0].heading == "Systems"


def test_curated_list_items_have_their_link_title_as_lead() -> None:
    body = KV_LIST.read_text(encoding="utf-8")
    s = parse_structure(body)
    pruning = next(x for x in s.sections if x.heading.endswith("Pruning / Evicting / Sparse"))
    snapkv = next(b for b in pruning.blocks if "SnapKV" in b.text)
    assert snapkv.kind == "list_item"
    assert snapkv.lead == "SnapKV: LLM Knows What You are Looking for Before Generation."
    assert (
        "SnapKV: LLM Knows What You are Looking for Before Generation.",
        "https://arxiv.org/abs/2404.14469",
    ) in (snapkv.links)
    assert snapkv.images == (
        ("GitHub Repo stars", "https://img.shields.io/github/stars/FasterDecoding/SnapKV"),
    )
    assert "Arxiv 2024." in snapkv.text and "GitHub Repo stars" not in snapkv.text  # image alts are not text
    assert body.splitlines()[snapkv.line - 1].startswith("2. [**SnapKV")


def test_wrapped_bold_label_lines_and_empty_links_in_a_chinese_newsletter() -> None:
    body = (ZH_DAILY / "2025-01-08_daily_paper.md").read_text(encoding="utf-8")
    first = next(x for x in parse_structure(body).sections if x.heading.startswith("1. REINFORCE++"))
    title, _, link = first.blocks
    assert title.lead == "原文标题："
    assert title.text == (
        "原文标题： REINFORCE++: A Simple and Efficient Approach for Aligning Large Language Models"
    )
    assert link.lead == "论文链接：" and link.links == (("", ""),)


def test_tables_rows_carry_their_header_and_cells() -> None:
    body = (
        "|Date|Title|Paper|Code|\n|:---:|:---:|:---:|:---:|\n"
        "|2023.09|🔥[**vLLM**] Efficient Memory Management for Large Language Model Serving with PagedAttention"
        "(@UC Berkeley etc) |[[pdf]](https://arxiv.org/pdf/2309.06180.pdf)|[[vllm]](https://github.com/vllm-project/vllm) "
        "![](https://img.shields.io/github/stars/vllm-project/vllm.svg?style=social)|\n"
    )
    (row,) = parse_structure(body).sections[0].blocks
    assert row.kind == "table_row"
    assert row.header == ("Date", "Title", "Paper", "Code")
    assert row.cells[0] == "2023.09"
    assert row.cells[1].startswith("🔥[vLLM] Efficient Memory Management")
    assert row.cell_links[2] == (("[pdf]", "https://arxiv.org/pdf/2309.06180.pdf"),)
    assert row.line == 3


def test_list_items_keep_their_own_text_depth_and_task_state() -> None:
    body = "- parent **lead** text\n  - [x] child one\n  - [ ] child two\n- next\n\n  loose paragraph\n"
    items = [b for b in parse_structure(body).sections[0].blocks if b.kind == "list_item"]
    assert [(b.text, b.depth, b.checked) for b in items] == [
        ("parent lead text", 0, None),
        ("child one", 1, True),
        ("child two", 1, False),
        ("next loose paragraph", 0, None),
    ]
    assert items[0].lead == ""  # bold in the middle is no lead


def test_block_quotes_and_html_blocks() -> None:
    body = "> [← Daily summary](../2026-08-04.md) · [Relationship graph](./graph.md)\n\n<div align=center>\n<img src=https://img.shields.io/badge/x.svg >\n</div>\n"
    quote, html = parse_structure(body).sections[0].blocks
    assert quote.kind == "quote" and quote.quoted
    assert quote.links == (("← Daily summary", "../2026-08-04.md"), ("Relationship graph", "./graph.md"))
    assert html.kind == "html" and html.text == ""
    assert html.images == (("", "https://img.shields.io/badge/x.svg"),)


def test_blocks_are_frozen_and_slotted() -> None:
    block = Block(kind="paragraph", text="x", line=1)
    with pytest.raises(AttributeError):
        block.text = "y"  # type: ignore[misc]
    assert not hasattr(block, "__dict__")


@pytest.mark.timeout(
    60
)  # a hang guard, not a figure: linear takes < 1 s; how time grows is `bench.parse_growth`
@pytest.mark.parametrize("shape", sorted(STRUCTURE_UNITS))
def test_a_hostile_body_of_640000_characters_is_read_whole(shape: str) -> None:
    # 8x the 80,000 characters that hung a parse (issue 15): a quadratic pass over them would run for hours.
    unit = STRUCTURE_UNITS[shape]
    text = unit * (640_000 // len(unit))
    sections = parse_structure(text).sections
    assert all(text[s.start : s.end] == s.text for s in sections)
    if shape == "blank":
        assert sections == ()
    elif shape == "headings":
        assert len(sections) == 640_000 // len(unit) and {s.heading for s in sections} == {"h"}
    else:
        (section,) = sections
        assert section.text == text.strip("\n")  # nothing dropped
        if shape == "nested-list":
            assert len(section.blocks) == 3 * 640_000 // len(unit)  # three nested items per line


def test_lone_surrogates_do_not_stop_the_parse() -> None:
    body = "# T\ud800x\npara \udfff\n"
    (section,) = parse_structure(body).sections
    assert section.heading == "T?x" and section.blocks[0].text == "para ?"
    assert (section.start, section.end) == (len("# T\ud800x\n"), len(body) - 1)
