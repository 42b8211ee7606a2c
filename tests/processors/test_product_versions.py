"""Product releases: what is a version of a named product, and what only looks like one.

Lines marked "real" come from the vendored corpus or the example root; "shaped" ones reproduce what issue 11
reports from material not vendored here.
"""

from processors.product_versions import versions_in


def test_metrics_ranges_model_generations_sizes_dates_and_section_numbers_are_not_versions() -> None:
    lines = [
        # shaped: the speed-up ranges issue 11 saw read as `TTFT 1.4` against `v1.3`
        "TTFT 1.3–1.4× lower than vLLM on H100",
        "TTFT 1.4× vs v1.3",
        # real: en_arxiv_zl-asica/2025-09-10.md (Dovetail) and 2025-09-10.md / 2025-09-11.md
        "Dovetail achieves inference speedups ranging from 1.79x to 10.1x on various consumer-grade GPUs",
        "Gemini 2.5 Pro achieved a state-of-the-art F1-score of 55.6 on the new benchmark, outperforming other models like GPT-5.",
        "The authors replicate human color-naming studies using Gemini 2.0-flash and Llama 3.3-70B-Instruct",
        # real: en_arxiv_zl-asica/2025-09-15.md
        "multi-label intent classification using the MultiWOZ 2.1 dataset",
        # real: the KV-cache list's venues; shaped: a date, a section number, a size
        "*Zhiyu Guo, Hidetaka Kamigaito, Taro Watanabe.* Arxiv 2024. NeurIPS 2025 Spotlight",
        "Released 2026.09.27; see Section 3.2.1 and Qwen 7B",
    ]
    assert [m for line in lines for m in versions_in(line)] == []


def test_named_product_releases_are_read_with_their_product() -> None:
    # real: examples/root living document and inbox/jay/2026-09-27-1335 (the seed's InferenceBench line)
    line = "vLLM v0.30.0 / SGLang v0.5.20 / TensorRT-LLM v1.2.1；实验对象：Claude Code 2.1.114、Codex CLI 0.125.0"
    assert [(m.product, m.version) for m in versions_in(line)] == [
        ("vLLM", "0.30.0"),
        ("SGLang", "0.5.20"),
        ("TensorRT-LLM", "1.2.1"),
        ("Claude Code", "2.1.114"),
        ("Codex CLI", "0.125.0"),
    ]
