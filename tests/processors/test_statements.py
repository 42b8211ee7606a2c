"""What a block states: never a link-only line, a bare label, metadata or a title; intro labels dropped."""

from __future__ import annotations

import re
import sys

import pytest

from processors.key_points import Said
from processors.statements import SPACES, cell_statement, said_by, statement
from processors.structure import Block, parse_structure


def block(markdown: str) -> Block:
    (only,) = parse_structure(markdown).blocks()
    return only


@pytest.mark.parametrize(
    "line",
    [
        # real: zh_hf_2404589803/final/2025-01-13_daily_paper.md
        "**论文链接：** [HuggingFace](https://huggingface.co/papers/2501.05874) | [arXiv](https://arxiv.org/abs/2501.05874)",
        "**论文链接：** []()",  # real: the id-less first days of the same newsletter
        "**原文标题：** VideoRAG: Retrieval-Augmented Generation over Video Corpus",
        # real: en_arxiv_zl-asica/2025-09-12.md
        "**Main category:** cs.HC",
        "**Keywords:** human-computer interaction, gesture recognition, contextual multi-arm bandit",
        "*Duke Lin, Michael Paskett, Ying Yang*",
        "**Key Contributions:**",
        "**Limitations:** ",
        # real: bench/quality/roots/shared/paper_card.md.j2 as built
        "Yike Zhang, Zhiyuan He et al. · arXiv 2508.02215 · listed 2025-08-05",
        "- 关键发现：",  # a label with nothing after it
        "[pdf](https://arxiv.org/pdf/2502.14051) [code](https://github.com/NVlabs/RocketKV)",
    ],
)
def test_structure_metadata_titles_and_bare_labels_state_nothing(line: str) -> None:
    assert statement(block(line)) == ""


def test_an_introducing_label_is_dropped_and_a_meaningful_one_kept() -> None:
    tldr = block("**TL;DR:** This paper presents a calibrationless longitudinal personalization method.")
    assert statement(tldr) == "This paper presents a calibrationless longitudinal personalization method."
    mooncake = block("- Mooncake 分布式 KV 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×")
    assert statement(mooncake) == "Mooncake 分布式 KV 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×"


def test_the_unit_s_own_id_and_a_trailing_source_line_are_taken_out() -> None:
    krul = block(  # bench/quality/roots/r1/tom_serving_0804.md.j2
        "4. **Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing** — "
        "多轮对话状态恢复，TTFT 1.5–2.68× 降低，KV 存储 1.33–2.35× 降低（arXiv:2507.08045）"
    )
    title = (
        "Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing"
    )
    assert statement(krul, title=title, own_ids=["2507.08045"]) == (
        "多轮对话状态恢复，TTFT 1.5–2.68× 降低，KV 存储 1.33–2.35× 降低"
    )
    engines = block(  # real: examples/root, jay's 10:50 note
        "H100 上 vLLM / SGLang / TensorRT-LLM 吞吐对比：SGLang 在高并发下领先 12%。\n"
        "来源：https://inferenceengineering.tech/h100-engines"
    )
    assert statement(engines) == "H100 上 vLLM / SGLang / TensorRT-LLM 吞吐对比：SGLang 在高并发下领先 12%。"


def test_another_paper_s_id_stays_in_the_sentence() -> None:
    line = block("- 经典基线（arXiv:2404.14496），今天的 CaliDrop 与它对比。")
    assert "2404.14496" in statement(line, own_ids=["2507.19906"])


def test_a_paragraph_speaks_by_sentence_and_a_bullet_whole() -> None:
    para = block("We propose LeanK. Experiments demonstrate up to 70% K cache reduction.")
    assert said_by(para) == [
        Said("We propose LeanK."),
        Said("Experiments demonstrate up to 70% K cache reduction."),
    ]
    bullet = block("- Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×；P50 TTFT 降低 46 倍")
    assert said_by(bullet) == [
        Said("Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×；P50 TTFT 降低 46 倍", bullet=True)
    ]


@pytest.mark.parametrize(
    ("cell", "header", "said"),
    [
        ("Payman Behnam, Yaosheng Fu et al.", "Authors", ""),
        ("ICML 2025", "", ""),
        ("2025-07-02", "Date", ""),
        ("96", "Upvotes", ""),
        ("We propose live migration of requests.", "Contribution", "We propose live migration of requests."),
    ],
)
def test_table_cells_state_content_only(cell: str, header: str, said: str) -> None:
    assert cell_statement(cell, header) == said


def test_a_statement_s_ends_lose_every_kind_of_white_space_as_a_regex_would() -> None:
    # The ends are trimmed with str.strip over a written list of white space: one missing (a no-break or an
    # ideographic space) would stay at the end of a point. The list must be exactly what `\s` matches.
    every = {c for c in map(chr, range(sys.maxunicode + 1)) if re.fullmatch(r"\s", c)}
    assert set(SPACES) == every
    assert statement(block("摘要：\u3000— P99 TTFT 降低 35%\u2003|")) == "P99 TTFT 降低 35%"
