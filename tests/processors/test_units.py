"""Units come from a note's structure: a paper (row, item, section, card) is a unit with its own points.

Notes are real: the vendored corpus (tests/corpus) and the quality roots' templates as built
(bench/quality/roots/r1, r3; their papers' sentences are the real abstracts of tests/corpus/arxiv_metadata).
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.id_titles import clean_title
from processors.structure import parse_structure
from processors.units import NoteNames, Unit, paper_title, split_ref, units_of
from tests.processors.notes import note

CORPUS = Path(__file__).parents[1] / "corpus"
ZH_DAILY = CORPUS / "daily_digests" / "zh_hf_2404589803" / "final"
EN_DIGEST = CORPUS / "daily_digests" / "en_arxiv_zl-asica" / "2025-09-12.md"
_TITLE_PIECES = [
    "LeanK", ": ", "KV 缓存", "📄", "🚀", "\ufe0f", "arXiv:", "2508.02215", "v2", "https://arxiv.org/abs/1",
    "1. ", "§3.2 ", "[12] ", "[vLLM] ", "(@UC Berkeley)", "（）", "()", "\u3000", "\t", "  ", ".", '"', "“", "”",
    "《", "》", "—", "-", "·", "|", ";", "，", "et al.",
]  # fmt: skip

# bench/quality/roots/r1/jay_kv_table_0804.md.j2, as built (two of its twelve rows).
R1_TABLE = """# KV cache daily paper table — 2026-08-04

Source spec: arXiv cs.CL / cs.LG / cs.DC listings of the last 48 h, filtered on "KV cache", "eviction" and "quantization"; methodology: titles and abstracts read, venues from the arXiv comment field.

> [← Daily summary](../2026-08-04.md) · [Relationship graph](../graph/2026-08-04.md)

## Papers

| Date | Title | Authors | Venue | Link |
|---|---|---|---|---|
| 2025-07-02 | RocketKV: Accelerating Long-Context LLM Inference via Two-Stage KV Cache Compression | Payman Behnam, Yaosheng Fu et al. | ICML 2025 | [arXiv](https://arxiv.org/abs/2502.14051) |
| 2025-07-14 | Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing | Junyi Wen, Junyuan Liang et al. | arXiv 2025 | [arXiv](https://arxiv.org/abs/2507.08045) |

## Notes

- MadaKV (arXiv:2506.15724): By dynamically sensing modality information within attention heads and adaptively retaining critical tokens, MadaKV achieves substantial reductions in KV cache memory footprint and model inference decoding latency (1.3 to 1.5 times improvement) while maintaining high accuracy across various multimodal long-context tasks. (unverified: the figure is from the authors' slides, not the paper)
- Lookahead Reasoning (arXiv:2506.19830): Speedup 1.4–2.1× over plain speculative decoding on GSM8K and AIME.

## Excluded (off-topic, not summarised)

- 2312.04684 — LaRS: Latent Reasoning Skills for Chain-of-Thought Reasoning (reasoning, not serving)
- 2407.01082 — Turning Up the Heat: Min-p Sampling for Creative and Coherent LLM Outputs (sampling)
"""

# bench/quality/roots/r1/tom_serving_0804.md.j2, as built.
R1_LIST = """# 推理服务论文速记（2026-08-04）

> [← 每日汇总](../2026-08-04.md) · [关系图](../graph/2026-08-04.md)

## 新论文

1. **FreeKV: Boosting KV Cache Retrieval for Efficient LLM Inference** — Experiments demonstrate that FreeKV achieves near-lossless accuracy across various scenarios and models, delivering up to 13× speedup compared to SOTA KV retrieval methods.（arXiv:2505.13109）
2. **SpindleKV: A Novel KV Cache Reduction Method Balancing Both Shallow and Deep Layers** — Experiments on two common benchmarks with three different LLMs shown that SpindleKV obtained better KV cache reduction effect compared to baseline methods, while preserving similar or even better model performance.（arXiv:2507.06517）
4. **Krul: Efficient State Restoration for Multi-turn Conversations with Dynamic Cross-layer KV Sharing** — 多轮对话状态恢复，TTFT 1.5–2.68× 降低，KV 存储 1.33–2.35× 降低（arXiv:2507.08045）

## 部署记录

- 本地复现使用 vLLM 0.6.3，FreeKV 的检索路径需要自定义 attention backend。

### cs.DC

今日 cs.DC 列表中未发现新的 KV cache 论文。
"""


def _units(text: str, path: str = "inbox/jay/2026-08-04-0930-kv-paper-table.md") -> list[Unit]:
    return units_of(note(path, text), "inference", 5, 0.6)


def _by_id(units: list[Unit]) -> dict[str, Unit]:
    return {u.primary_ids[0]: u for u in units if u.primary_ids}


def test_each_table_row_is_a_paper_and_header_venue_authors_and_link_cells_are_no_points() -> None:
    units = _units(R1_TABLE)
    rows = [u for u in units if u.shape == "row"]
    assert [u.primary_ids for u in rows] == [("2502.14051",), ("2507.08045",)]
    assert all(u.points == () and u.thesis == "" for u in rows)  # Date · Title · Authors · Venue · Link only
    assert rows[0].ref.endswith("#Papers") and "RocketKV" in rows[0].text and "Krul" not in rows[0].text


def test_a_row_s_content_cells_are_its_points() -> None:
    text = (  # the table of test_id_titles: a title column beside venue and contribution cells
        "## Papers\n| Year | Venue | Title | Contribution | Link |\n|---|---|---|---|---|\n"
        "| 2024 | OSDI 2024 | Llumnix: Dynamic Scheduling for LLM Serving | We propose live migration of requests. "
        "| [arXiv](https://arxiv.org/abs/2406.03243) |\n"
    )
    (row,) = _units(text)
    assert row.points == ("We propose live migration of requests.",)


def test_the_note_s_head_the_excluded_list_and_nothing_new_make_no_unit() -> None:
    refs = [u.ref for u in _units(R1_TABLE)]
    assert "inbox/jay/2026-08-04-0930-kv-paper-table.md" not in refs  # source spec and back-links only
    assert not any("Excluded" in r for r in refs)
    tom = _units(R1_LIST, "inbox/tom/2026-08-04-1410-serving-papers.md")
    assert not any(u.ref.endswith("#cs.DC") for u in tom)  # `未发现新的 KV cache 论文`


def test_each_list_item_is_its_own_paper_and_never_carries_its_neighbours() -> None:
    by_id = _by_id(_units(R1_LIST, "inbox/tom/2026-08-04-1410-serving-papers.md"))
    assert set(by_id) == {"2505.13109", "2507.06517", "2507.08045"}
    free = by_id["2505.13109"]
    assert free.points == (
        "Experiments demonstrate that FreeKV achieves near-lossless accuracy across various scenarios and "
        "models, delivering up to 13× speedup compared to SOTA KV retrieval methods.",
    )
    assert "SpindleKV" not in free.text and "SpindleKV" not in " ".join(free.points)
    assert by_id["2507.08045"].points == ("多轮对话状态恢复，TTFT 1.5–2.68× 降低，KV 存储 1.33–2.35× 降低",)


def test_an_item_keeps_the_items_nested_under_it() -> None:
    text = (  # the shape of the KV-cache list (tests/corpus/living_docs): a linked bold title, authors, venue
        "# 新论文\n\n## 调度\n1. [**SAGA: Workflow-Atomic Scheduling for AI Agent Inference.**]"
        "(https://arxiv.org/abs/2609.35555) *A. Author, B. Author.* OSDI 2024.\n"
        "   - 吞吐量提升 3.2×，P99 TTFT 降低 41%\n2. [**Other Paper on Serving**](https://arxiv.org/abs/2609.35556)\n"
    )
    saga, other = _units(text)
    assert saga.points == ("吞吐量提升 3.2×，P99 TTFT 降低 41%",)  # authors and venue are no point
    assert other.primary_ids == ("2609.35556",) and other.points == ()


def test_a_paper_less_section_is_a_unit_only_with_substance() -> None:
    tom = _units(R1_LIST, "inbox/tom/2026-08-04-1410-serving-papers.md")
    (deploy,) = [u for u in tom if u.ref.endswith("#部署记录")]
    assert deploy.shape == "section" and deploy.primary_ids == ()
    thin = _units("# jay\n\n## 3. RAG 2026 类型学\nAgentic RAG、GraphRAG、Long-context RAG 三分法。\n")
    assert thin == []  # real: examples/root, jay's security note — one sentence, no number


def test_a_digest_entry_is_one_paper_and_its_metadata_lines_are_no_points() -> None:
    body = EN_DIGEST.read_text(encoding="utf-8")
    first = next(u for u in _units(body) if u.primary_ids == ("2509.08915",))
    assert first.shape == "section_paper"
    said = " ".join([*first.points, first.thesis])
    for scaffold in ("Main category", "Keywords", "Relevance Score", "Read time", "Duke Lin", "Details"):
        assert scaffold not in said
    assert any("0.113" in p for p in first.points)  # the Result line's figure comes first
    assert not any(u.ref.endswith("#Table of Contents") for u in _units(body))


def test_a_newsletter_paper_is_one_unit_keyed_by_its_link_and_named_by_its_original_title() -> None:
    body = (ZH_DAILY / "2025-01-23_daily_paper.md").read_text(encoding="utf-8")
    units = _units(body, "inbox/tom/2026-08-13-1000-hf-zh-daily.md")
    deepseek = next(u for u in units if u.primary_ids == ("2501.12948",))
    assert deepseek.shape == "section_paper"
    assert not any("论文链接" in p or "原文标题" in p for p in deepseek.points)
    assert not any("总论文数" in p for u in units for p in u.points)
    assert len([u for u in units if "2501.12948" in u.ids]) == 1  # not again as a line-sized unit


def test_a_section_opening_with_an_id_is_that_paper_with_its_bullets() -> None:
    text = (  # real: examples/root, jay's security note
        "# jay\n\n### 2.4 llm-d × vLLM × Mooncake\n来源：https://arxiv.org/html/2609.23130v1\n"
        "- agentic 工作负载：输入 token 占服务 token 的 98.6%，可重用前缀状态主导部署设计\n"
        "- Mooncake 分布式 KV 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×；P50 TTFT 降低 46 倍\n"
    )
    (unit,) = _units(text)
    assert unit.primary_ids == ("2609.23130",) and unit.shape == "section_paper"
    assert unit.urls[0] == "https://arxiv.org/html/2609.23130v1"  # the source line: a URL, never a point
    assert not any("来源" in p for p in unit.points) and len(unit.points) == 2


def test_a_card_s_points_skip_its_author_line() -> None:
    card = note(  # bench/quality/roots/shared/paper_card.md.j2 as built for 2508.02215
        "paper_cards/2102-2508-02215.md",
        '---\ntitle: "LeanK: Learnable K Cache Channel Pruning for Efficient Decoding"\narxiv: "2508.02215"\n---\n'
        "# LeanK: Learnable K Cache Channel Pruning for Efficient Decoding\n\n"
        "Yike Zhang, Zhiyuan He et al. · arXiv 2508.02215 · listed 2025-08-05\n\n"
        "We propose LeanK, a learning-based method that prunes unimportant key (K) cache channels. "
        "Experiments demonstrate up to 70% K cache and 16%-18% V cache memory reduction. "
        "Custom decoding kernel enables 1.3x speedup for attention computation.\n",
    )
    (unit,) = units_of(card, "inference", 5, 0.6)
    assert unit.shape == "card" and not any("Yike Zhang" in p for p in unit.points)
    assert unit.points[0].startswith("Experiments demonstrate up to 70%")
    assert unit.thesis.startswith("We propose LeanK")


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


def test_a_nested_item_is_its_parent_s_point_and_a_paper_under_a_plain_item_is_its_own() -> None:
    text = (  # the shape of tom's serving note (bench/quality/roots/r1), one level deeper
        "# 推理服务论文速记\n\n## 新论文\n"
        "- **FreeKV: Boosting KV Cache Retrieval for Efficient LLM Inference**（arXiv:2505.13109）\n"
        "  - 对比 SnapKV（arXiv:2404.14469），检索召回提升 13×\n"
        "- KV cache 压缩：\n"
        "  - **CaliDrop: KV Cache Compression with Calibration**（arXiv:2507.19906）：token eviction 精度提升 5%\n"
    )
    by_id = _by_id(_units(text, "inbox/tom/2026-08-04-1410-serving-papers.md"))
    assert set(by_id) == {"2505.13109", "2507.19906"}  # SnapKV is FreeKV's comparison, not a paper here
    assert by_id["2505.13109"].points == ("对比 SnapKV（arXiv:2404.14469），检索召回提升 13×",)
    assert by_id["2507.19906"].points == ("token eviction 精度提升 5%",)


def test_a_card_line_that_only_restates_its_title_is_no_point() -> None:
    title = "LeanK: Learnable K Cache Channel Pruning for Efficient Decoding"
    card = note(
        "paper_cards/2102-2508-02215.md",
        f'---\ntitle: "{title}"\narxiv: "2508.02215"\n---\n# {title}\n\n'
        f"- 📄  {title}  https://arxiv.org/abs/2508.02215\n"
        "- Experiments demonstrate up to 70% K cache memory reduction.\n",
    )
    (unit,) = units_of(card, "inference", 5, 0.6)
    assert unit.points == ("Experiments demonstrate up to 70% K cache memory reduction.",)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TITLE_PIECES) | st.text(max_size=5), max_size=25).map("".join))
def test_cleaning_a_title_only_removes_characters(text: str) -> None:
    # Units skip clean_title for a statement shorter than the title or missing one of its characters: exact
    # only while cleaning never lengthens a text nor brings in a character other than a space.
    cleaned = clean_title(text)
    assert len(cleaned) <= len(text)
    assert set(cleaned) - {" "} <= set(text)


def test_a_source_ref_is_cut_after_the_note_it_names_even_when_the_name_holds_a_hash() -> None:
    # Cut at the first `#`, `inbox/C#/a.md#§2` named a note `inbox/C` and the section `/a.md#§2`.
    notes = NoteNames({"inbox/C#/a.md", "inbox/jay/b.md"})
    assert split_ref("inbox/C#/a.md#§2 C# bindings", notes) == ("inbox/C#/a.md", "§2 C# bindings")
    assert split_ref("inbox/C#/a.md", notes) == ("inbox/C#/a.md", "")
    assert split_ref("inbox/jay/b.md#C# tips", notes) == ("inbox/jay/b.md", "C# tips")
    assert split_ref("inbox/jay/unknown.md#§1", notes) == (
        "inbox/jay/unknown.md",
        "§1",
    )  # not known: its first `#`
    assert split_ref("inbox/jay/unknown.md", notes) == ("inbox/jay/unknown.md", "")


def test_a_source_ref_names_the_longest_of_two_notes_whose_names_prefix_each_other() -> None:
    # The shortest cut linked `a/C#b.md`'s increments to the note `a/C` in the browse page and `explain`.
    notes = NoteNames({"inbox/a/C", "inbox/a/C#b.md"})
    assert split_ref("inbox/a/C#b.md#§1", notes) == ("inbox/a/C#b.md", "§1")
    assert split_ref("inbox/a/C#§1", notes) == ("inbox/a/C", "§1")


def test_a_source_ref_whose_heading_holds_many_hashes_is_cut_in_time_linear_in_it() -> None:
    # Each `#` of the heading was tried as the end of a note's name, a slice of the ref each: a hostile note's
    # heading of 64,000 `#` took 0.6 s per link on its briefing's browse page (and per increment in `explain`).
    notes = NoteNames({"inbox/jay/a.md", "inbox/a/C#b.md"})

    def cpu(n: int) -> float:
        ref = "inbox/jay/a.md#C" + "#" * n
        began = time.process_time()
        assert split_ref(ref, notes) == ("inbox/jay/a.md", ref[len("inbox/jay/a.md#") :])
        return time.process_time() - began

    assert cpu(200_000) < 0.05  # ~6 s before; a few µs now
    assert split_ref("inbox/a/C#b.md#" + "#" * 1000, notes)[0] == "inbox/a/C#b.md"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("a#/", max_size=6), max_size=6), st.text("a#/", max_size=12))
def test_a_source_ref_is_cut_after_the_longest_known_name_it_starts_with(names: list[str], ref: str) -> None:
    # Looked for only as far in as the longest name reaches: the same cut as trying every `#`.
    cuts = [i for i, ch in enumerate(ref) if ch == "#" and ref[:i] in names]
    at = cuts[-1] if cuts else ref.find("#")
    whole = (ref, "") if ref in names or at < 0 else (ref[:at], ref[at + 1 :])
    assert split_ref(ref, NoteNames(names)) == whole
