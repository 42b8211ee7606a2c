"""Plausible titles: a paper's title, never a venue, an author list, a sentence about it or a fragment."""

import pytest

from processors.title_checks import plausible_title

TITLES = [
    # real: items 17, 18 and 28 of the KV-cache list (tests/corpus/living_docs), with their list's trailing dot
    "Attention Score is not All You Need for Token Importance Indicator in KV Cache Reduction: Value Also Matters.",
    "On the Efficacy of Eviction Policy for Key-Value Constrained Generative Language Model Inference.",
    "MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse Attention",
    # real: zh_hf_2404589803/final/2025-01-22_daily_paper.md (a translated heading)
    "MMVU：专家级多学科视频理解评估",
    # real: examples/root baseline 四
    "Fluid-Guided Online Scheduling",
]
NOT_TITLES = [
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


@pytest.mark.parametrize("text", TITLES)
def test_real_titles_are_plausible(text: str) -> None:
    assert plausible_title(text)


@pytest.mark.parametrize("text", NOT_TITLES)
def test_venues_authors_sentences_fragments_and_labels_are_not_titles(text: str) -> None:
    assert not plausible_title(text)
