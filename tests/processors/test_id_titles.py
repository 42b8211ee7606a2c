"""Titles are true or absent: read from the note's structure, in order of trust, never a venue or a fragment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from processors.id_titles import (
    _BEFORE_ID,
    _FIELDS,
    NAME,
    TRUST,
    BestTitles,
    _lead,
    _metadata_field,
    clean_title,
    is_metadata,
    lead_name,
    lead_names,
    plausible_title,
    titled_ids,
)
from processors.models import Document, TitledId

CORPUS = Path(__file__).parents[1] / "corpus"
KV_LIST = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
ZH_DAILY = CORPUS / "daily_digests" / "zh_hf_2404589803" / "final"


def doc(path: str, text: str, *, title: str = "", ids: tuple[str, ...] = ()) -> Document:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return Document(
        path=path,
        sha256="0",
        writer=None,
        kind="paper_card" if path.startswith("paper_cards/") else "inbox",
        event_time=datetime(2026, 9, 27, tzinfo=UTC),
        bytes=len(text),
        title=title or stem,
        arxiv_ids=ids,
        text_hash="0",
        text=text,
    )


def best_titles(pairs: Iterable[TitledId]) -> dict[str, str]:
    """The title of each id from its most trusted source, as a briefing's `BestTitles` keeps it."""
    best = BestTitles()
    best.add(pairs)
    return best.titles()


def titles(d: Document) -> dict[str, str]:
    return best_titles(titled_ids(d))


@pytest.mark.parametrize(
    "text",
    [
        "SnapKV: LLM Knows What You are Looking for Before Generation",
        "DeepSeek-V4.1-Flash: Pushing the Limits of KV Cache Compression",
        "FilmAgent: A Multi-Agent Framework for End-to-End Film Automation in Virtual 3D Spaces",
        "Efficient Memory Management for Large Language Model Serving with PagedAttention",
        "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models",
        "Detokenization Leaks",
        "InferenceBench",
        "Keep the Cost Down: A Review on Methods to Optimize LLM' s KV-Cache Consumption",
        "面向物理AI的Cosmos世界基础模型平台",
    ],
)
def test_real_titles_are_plausible(text: str) -> None:
    assert plausible_title(text)


@pytest.mark.parametrize(
    "text",
    [
        # venues, from the venue cells and list tails of real curated lists
        "OSDI 2024", "ICML 2024", "arXiv 2024", "Arxiv 2024.", "NeurIPS 2025 Spotlight", "ACL 2024", "2023.09",
        # author lists
        "Xuanzhe Li et.al.",
        "Zichang Liu, Aditya Desai, Fangshuo Liao, Weitao Wang, Victor Xie",
        "Siyu Ren, Kenny Q. Zhu.",
        # contribution sentences
        "This paper presents a calibrationless longitudinal personalization method for hand gesture recognition",
        "我们提出了一种新的 KV cache 压缩方法。",
        # cut fragments and joined fields
        "Compiler for Direct CUDA Inference** · Xuanzhe Li et.al. · [",
        "Efficient Memory Management for Large (",
        # a briefing's own heading read back
        "增量 2： — 부상 — …SAGA（⭐⭐⭐⭐⭐",
        # a D-item heading of yesterday's briefing read back as the baseline (the quality root r1, day 2)
        "D5：作者标注待核实：MadaKV : By dynamical…",
        # link placeholders and labels
        "[pdf]", "arXiv", "HuggingFace", "原文标题：", "论文链接", "",
    ],
)  # fmt: skip
def test_non_titles_are_refused(text: str) -> None:
    assert not plausible_title(text)


def test_clean_title_drops_numbering_ids_tags_and_affiliations() -> None:
    assert clean_title("2.4 llm-d × vLLM × Mooncake（arXiv:2609.23130）") == "llm-d × vLLM × Mooncake"
    assert clean_title("[1] A Contextual Bandits Approach") == "A Contextual Bandits Approach"
    assert (
        clean_title(
            "🔥[vLLM] Efficient Memory Management for LLM Serving with PagedAttention(@UC Berkeley etc)"
        )
        == "Efficient Memory Management for LLM Serving with PagedAttention"
    )
    assert clean_title("SnapKV: LLM Knows What You are Looking for Before Generation.") == (
        "SnapKV: LLM Knows What You are Looking for Before Generation"
    )


def test_curated_list_titles_come_from_the_links_never_from_venues_or_authors() -> None:
    got = titles(doc("living/kv.md", KV_LIST.read_text(encoding="utf-8")))
    assert got["2404.14469"] == "SnapKV: LLM Knows What You are Looking for Before Generation"
    assert got["2305.17118"].startswith("Scissorhands: Exploiting the Persistence")
    venues = {"NeurIPS 2023", "Arxiv 2024", "ICLR 2024", "Pruning / Evicting / Sparse"}
    assert not venues & set(got.values())
    assert len(got) > 100 and all(plausible_title(t) for t in got.values())


def test_chinese_newsletter_titles_come_from_the_original_title_line() -> None:
    got = titles(
        doc("inbox/tom/2025-01-23-hf.md", (ZH_DAILY / "2025-01-23_daily_paper.md").read_text("utf-8"))
    )
    assert got["2501.12909"] == (
        "FilmAgent: A Multi-Agent Framework for End-to-End Film Automation in Virtual 3D Spaces"
    )
    assert (
        got["2501.12948"]
        == "DeepSeek-R1: Incentivizing Reasoning Capability in LLMs via Reinforcement Learning"
    )


def test_a_table_title_column_wins_over_venue_and_contribution_cells() -> None:
    text = (
        "## Papers\n| Year | Venue | Title | Contribution | Link |\n|---|---|---|---|---|\n"
        "| 2024 | OSDI 2024 | Llumnix: Dynamic Scheduling for LLM Serving | We propose live migration of requests. "
        "| [arXiv](https://arxiv.org/abs/2406.03243) |\n"
        "| 2024 | ICML 2024 | | no title here | [arXiv](https://arxiv.org/abs/2401.09670) |\n"
    )
    pairs = titled_ids(doc("inbox/jay/2026-09-27-x.md", text))
    assert [(p.id, p.title, p.rank) for p in pairs] == [
        ("2406.03243", "Llumnix: Dynamic Scheduling for LLM Serving", TRUST["table"])
    ]  # the second id has no title: it stands alone


def test_headings_with_one_id_and_links_in_headings() -> None:
    text = (
        "# Digest\n### [1] [A Contextual Bandits Approach for Personalization of Hand Gesture Recognition]"
        "(https://arxiv.org/abs/2509.08915)\n*Duke Lin, Michael Paskett, Ying Yang*\n"
        "### Detokenization Leaks (arXiv 2609.06674)\ntext\n"
        "### 增量 2：arXiv 2605.00528 — SAGA（⭐⭐⭐⭐⭐）\ntext\n"
    )
    got = titles(doc("inbox/jay/2026-09-27-x.md", text))
    assert got == {
        "2509.08915": "A Contextual Bandits Approach for Personalization of Hand Gesture Recognition",
        "2609.06674": "Detokenization Leaks",
    }


def test_a_paper_card_title_is_the_most_trusted_and_a_list_lead_the_least() -> None:
    card = doc("paper_cards/1417-2609-19969.md", "# DiffusionGemma Technical Report\n", ids=("2609.19969",))
    card = card.model_copy(update={"title": "DiffusionGemma Technical Report"})
    assert [(p.title, p.rank, p.strong) for p in titled_ids(card)] == [
        ("DiffusionGemma Technical Report", TRUST["card"], True)
    ]
    note = doc(
        "inbox/a/2026-09-27-x.md", "## 新论文\n- **Sample Count Is Not Enough**：arXiv 2609.19499 候选生成\n"
    )
    (pair,) = titled_ids(note)
    assert (pair.title, pair.rank, pair.strong) == ("Sample Count Is Not Enough", TRUST["lead"], False)


def test_best_titles_prefers_rank_then_order() -> None:
    pairs = [
        TitledId(id="1", title="lead", source="a", strong=False, rank=TRUST["lead"]),
        TitledId(id="1", title="link", source="b", strong=True, rank=TRUST["link"]),
        TitledId(id="1", title="table", source="c", strong=True, rank=TRUST["table"]),
        TitledId(id="2", title="old strong", source="d", strong=True),  # a record from before ranks
        TitledId(id="2", title="old weak", source="e", strong=False),
    ]
    assert best_titles(pairs) == {"1": "link", "2": "old strong"}


# Cases written for the D-items' title check, now the one predicate's.

D_TITLES = [
    # real: items 17, 18 and 28 of the KV-cache list (tests/corpus/living_docs), with their list's trailing dot
    "Attention Score is not All You Need for Token Importance Indicator in KV Cache Reduction: Value Also Matters.",
    "On the Efficacy of Eviction Policy for Key-Value Constrained Generative Language Model Inference.",
    "MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse Attention",
    # real: zh_hf_2404589803/final/2025-01-22_daily_paper.md (a translated heading)
    "MMVU：专家级多学科视频理解评估",
    # real: examples/root baseline 四
    "Fluid-Guided Online Scheduling",
]
D_NOT_TITLES = [
    "NeurIPS 2025 Spotlight",  # shaped: the venue column of issue 11's daily paper table
    "ICLR 2025 (Oral)",
    "Arxiv 2024",  # real: the KV-cache list's venue after each entry
    "Zhiyu Guo, Hidetaka Kamigaito, Taro Watanabe",  # real: item 17's authors
    "Compiler for Direct CUDA Inference** · Xuanzhe Li et.al. · [",  # real: issue 11's 四 fragment
    # real: en_arxiv_zl-asica/2025-09-12.md item [1]'s TL;DR
    "This paper presents a calibrationless longitudinal personalization method for hand gesture recognition",
    "提出一种基于注意力分数的 KV 缓存淘汰方法，吞吐提升 2 倍",  # shaped: a contribution cell
    "总论文数：13",  # real: zh_hf_2404589803/final/2025-01-22_daily_paper.md
    "Introduction",
    "2406.12335",
]


@pytest.mark.parametrize("text", D_TITLES)
def test_the_d_items_real_titles_are_plausible(text: str) -> None:
    assert plausible_title(text)


@pytest.mark.parametrize("text", D_NOT_TITLES)
def test_venues_authors_sentences_fragments_and_labels_are_not_titles(text: str) -> None:
    assert not plausible_title(text)


# The quality roots (bench/quality/roots/r1/jay_kv_table_0804.md.j2 and r3/tom_serving_kv_0820.md.j2, as built).
R1_NOTES = (
    "## Notes\n\n"
    "- MadaKV (arXiv:2506.15724): By dynamically sensing modality information within attention heads and "
    "adaptively retaining critical tokens, MadaKV achieves substantial reductions in KV cache memory footprint "
    "and model inference decoding latency (1.3 to 1.5 times improvement) while maintaining high accuracy across "
    "various multimodal long-context tasks. (unverified: the figure is from the authors' slides, not the paper)\n"
    "- Lookahead Reasoning (arXiv:2506.19830): Speedup 1.4–2.1× over plain speculative decoding on GSM8K and AIME.\n"
)
R3_EXCLUDED = (
    "## Excluded (read, not in scope)\n\n"
    "- 2502.03771 — vCache: Verified Semantic Prompt Caching: semantic prompt caching, not a KV cache\n"
)


def test_a_name_before_an_id_is_never_the_paper_s_title_but_stays_evidence_for_d_items() -> None:
    pairs = titled_ids(doc("inbox/jay/2026-08-04-0930-kv-paper-table.md", R1_NOTES))
    assert best_titles(pairs) == {}  # `MadaKV`, `Lookahead Reasoning`: the id stands alone
    assert [(p.id, p.title, p.rank) for p in pairs] == [("2506.15724", "MadaKV", NAME)]


def test_the_heading_of_an_excluded_list_or_of_a_topic_is_no_title() -> None:
    excluded = doc("inbox/tom/2026-08-20-1500-serving-kv-papers.md", R3_EXCLUDED)
    assert titles(excluded) == {}  # not `Excluded (read, not in scope)`
    topic = doc(  # real: examples/root, jay's security note
        "inbox/jay/2026-09-27-1335-x.md",
        "# jay\n\n## 安全事件关联\nDetokenization Leaks（arXiv 2609.06674）：共享后端（Ollama / LM Studio）时，"
        "detokenization 时间可作为侧信道泄露其他用户的 LLM 输出。\n",
    )
    assert titles(topic) == {}  # neither `安全事件关联` nor the name `Detokenization Leaks`


def test_a_heading_over_a_paragraph_opening_with_the_id_titles_the_section_s_paper() -> None:
    text = (  # real: examples/root, jay's security note
        "# jay\n\n### 2.1 InferenceBench\narXiv:2607.20468 提出 InferenceBench，测量端到端的 LLM 推理服务器部署和"
        "优化能力。\n- 关键发现：Agent 驱动的推理优化在固定预算下可超越人工调优基线\n\n"
        "### 2.4 llm-d × vLLM × Mooncake\n来源：https://arxiv.org/html/2609.23130v1\n"
        "- Mooncake 分布式 KV 持久化：Cache hit 从 1.7% 升至 92.2%\n"
    )
    assert titles(doc("inbox/jay/2026-09-27-1335-x.md", text)) == {
        "2607.20468": "InferenceBench",
        "2609.23130": "llm-d × vLLM × Mooncake",
    }


def test_a_paragraph_citing_several_papers_names_each_as_one_id_at_a_time_does() -> None:
    line = (
        "KV 压缩：KVTC（arXiv:2511.01815，20× 压缩）/ GEAR（arXiv 2403.05527v2）优于 H2O 2306.14048；"
        "另见 https://arxiv.org/abs/2502.00001 与 KVTC（2511.01815）"
    )
    names = lead_names(line)
    assert names["2511.01815"] == "KVTC"  # the first mention of an id names it
    for arxiv_id in ("2511.01815", "2403.05527", "2403.05527v2", "2306.14048", "2502.00001", "2609.99999"):
        assert names.get(arxiv_id.split("v")[0], "") == lead_name(line, arxiv_id)


@pytest.mark.parametrize(
    ("text", "metadata"),
    [
        ("Yike Zhang, Zhiyuan He et al. · arXiv 2508.02215 · listed 2025-08-05", True),
        ("Mingjie Sun, Xinlei Chen. Arxiv 2024.", True),
        ("NeurIPS 2024 | 2025-01-02", True),
        # A finding in the first field, or after the authors' field, is never metadata.
        ("We propose a cache. It is 3× faster · see arXiv 2508.02215", False),
        ("Mingjie Sun, Xinlei Chen. We show that pruning works.", False),
        ("本文提出了一种新的 KV 缓存压缩方法，吞吐提升 2.1 倍", False),
    ],
)
def test_a_metadata_line_is_metadata_in_every_field_and_a_finding_in_any_is_not(
    text: str, metadata: bool
) -> None:
    assert is_metadata(text) is metadata
    fields = [p for p in _FIELDS.split(" ".join(text.split())) if p]
    assert all(_metadata_field(p) for p in fields) is metadata  # what reading the fields one by one stops at


# The fields' separators as first written, each branch opening with its lookbehind.
_PLAIN_FIELDS = re.compile(r"(?<!\s)\s++[·|]\s+|(?<=[a-z\)])\.\s+")


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "Z", ")", ".", " ", "  ", "\t", "\n", "·", "|", "中", "。", "\u3000"]),
        max_size=40,
    )
)
def test_a_line_is_cut_into_the_same_fields_as_the_plain_pattern_cuts_it(chars: list[str]) -> None:
    text = "".join(chars)
    assert _FIELDS.split(text) == _PLAIN_FIELDS.split(text)


def test_the_words_before_each_id_of_a_long_paragraph_name_it() -> None:
    # Searched from just before each id (the paragraph's other characters are never tried): the same names.
    line = (
        "前文" * 400
        + "。 Detokenization Leaks（arXiv\u3000 2609.06674）与 KV Cache Clustering (2506.11418v2)；"
        + "x" * 300
        + " GEAR arxiv:2403.05527"
    )
    assert lead_name(line, "2609.06674") == "Detokenization Leaks"
    assert lead_names(line) == {
        "2609.06674": "Detokenization Leaks",
        "2506.11418": "）与 KV Cache Clustering",
        "2403.05527": "x" * 55 + " GEAR",
    }


# What stands between words and an id, or looks like it: brackets, colons, Unicode spaces, `arXiv` with a dotted
# or dotless i, ids back to back or inside long words and digit runs.
_PIECES = st.sampled_from(
    [
        "2401.12345",
        "2401.1234",
        "12345.678901",
        "v2",
        "arXiv:",
        "ARXIV ",
        "arxıv",
        "arXİv",
        "（",
        "(",
        ":",
        "：",
        " ",
        "\u3000",
        "\u00a0",
        "\u2003",
        "\t",
        "\n",
        "，",
        ";",
        "/",
        "x" * 58,
        "Name",
        "ä",
        "٢٤٠١.١٢٣٤٥",
    ]
)


@settings(max_examples=400, deadline=None)
@example("x" * 58 + "arxıv 2401.12345")  # a dotless i: `_BEFORE_ID` ignores case as Unicode does
@example("y" * 58 + "ARXİV\u3000(2401.12345")
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_words_before_ids_are_those_a_search_from_every_character_finds(line: str) -> None:
    # The search starts just before each id, not at every character: it must find the same first names.
    firsts: dict[str, str] = {}
    for m in _BEFORE_ID.finditer(line):
        firsts.setdefault(m.group(2), _lead(m))
    assert lead_names(line) == firsts
