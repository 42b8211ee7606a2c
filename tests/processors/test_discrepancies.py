"""D-items: each detector on real lines, what it must find and what an editor would dismiss at a glance.

Lines marked "real" are copied from the vendored corpus (tests/corpus, /work/shared/corpus) or the example
root; lines marked "shaped" reproduce what issue 11 reports from material that is not vendored here.
"""

from pathlib import Path

from processors.briefing_request import cited_ids_of
from processors.discrepancies import flagged_and_unsourced, version_conflicts
from processors.id_conflicts import id_conflicts
from processors.living_doc import parse_living_doc
from processors.models import Document, TitledId
from processors.units import units_of
from tests.processors.notes import brief, living, note

BASELINE = note(
    "inbox/tom/2026-09-26-inference-e1prep.md",
    "# inference · E1 预消化简报(2026-09-26)\n\n## 三\nD193：x\nD194：y\n\n## 四\n"
    "| arXiv 号 | 标题 |\n|---|---|\n| 2504.11320 | Fluid-Guided Online Scheduling |\n",
)
VERSIONS = note(
    "inbox/jay/2026-09-27-1620-csdn.md",
    "# CSDN 推理\n\n## vLLM 生产 10 大坑\n- vLLM 0.3.3（2026-Q2 生产验证）推理服务\n"
    "- langgraph >= 1.2.4，Python >= 3.10\n\n## 投机解码\n- DSpark 投机解码 85% 加速 ⚠ 待核实\n- EAGLE 2-4× 加速 vLLM 推理\n",
)
TYPO = note(
    "inbox/jay/2026-09-27-1140-radar.md",
    "# 雷达\n\n## Fluid-Guided Online Scheduling\nFluid-Guided Online Scheduling arXiv:2504.11302 讨论 LLM 推理调度。\n",
)
FUTURE = note(
    "inbox/tom/2026-09-27-0900-daily.md", "# 日报\n\n## 推理\nvLLM 推理新论文 arXiv:2610.00123 发布。\n"
)
KV_LIST = Path(__file__).parents[1] / "corpus/living_docs/October2001_Awesome-KV-Cache-Compression_README.md"


# real: item 28 of the KV-cache list, as the living document lists it
MINFERENCE_LISTED = (
    "# inference.md v3.44\n\n## §3 KV Cache\n\n### §3.3 Cache Compression\n"
    "28. [**MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse Attention.**]"
    "(https://arxiv.org/abs/2407.02490) *Huiqiang Jiang, Yucheng Li.* NeurIPS 2024.\n"
)


def minference_note(cited_id: str) -> Document:
    """shaped: a note that names MInference by its full title and cites it as `cited_id`."""
    return note(
        "inbox/jay/2026-09-27-1000-minference.md",
        "# 长上下文推理\n\n## MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse "
        f"Attention（arXiv {cited_id}）\nMInference 动态稀疏注意力加速长上下文 prefill 推理，TTFT 降低 10×。\n",
    )


def _items():
    return brief([BASELINE, VERSIONS, TYPO, FUTURE]).discrepancies


def _units(*docs):
    return [u for d in docs for u in units_of(d, "inference", 4, 1.0)]


def test_a_version_that_disagrees_with_the_living_document_is_flagged_but_constraints_are_not() -> None:
    versions = [d for d in _items() if d.kind == "version_conflict"]
    assert [d.subject for d in versions] == ["vLLM 0.3.3 与 v0.30.0 版本号差异"]
    assert versions[0].claims[1].source == "§1.1"
    assert "§1.1" in versions[0].suggestion
    assert versions[0].key == "version:vllm:0.3.3|0.30.0"


def test_neighbouring_releases_and_release_notes_are_no_conflict() -> None:
    notes = [
        note("inbox/jay/2026-09-27-1000-a.md", "# vLLM\n\n## 升级\n- 在 vLLM 0.29.1 上复现，吞吐持平\n"),
        note(
            "inbox/tom/2026-09-27-1100-b.md", "# vLLM\n\n## 发布\n- vLLM 0.6.3 修复了该问题；升级到 v0.7.0\n"
        ),
    ]
    assert version_conflicts(_units(*notes), parse_living_doc(living()), "zh") == []


def test_two_writers_naming_far_apart_releases_of_an_unanchored_product_conflict() -> None:
    jay = note("inbox/jay/2026-09-27-1000-a.md", "# 推理\n\n## 引擎\n- LMDeploy v0.7.3 部署 Qwen 推理服务\n")
    tom = note("inbox/tom/2026-09-27-1100-b.md", "# 推理\n\n## 引擎\n- LMDeploy 0.2.6 部署推理\n")
    (item,) = version_conflicts(_units(jay, tom), parse_living_doc(living()), "en")
    assert item.key == "version:lmdeploy:0.2.6|0.7.3"
    assert item.subject == "LMDeploy v0.7.3 vs 0.2.6: version mismatch"


def test_the_same_title_under_two_ids_is_flagged_and_the_new_id_is_no_new_paper() -> None:
    (item,) = [d for d in _items() if d.kind == "arxiv_id_conflict"]
    assert "2504.11320 / 2504.11302" in item.subject
    b = brief([BASELINE, VERSIONS, TYPO, FUTURE])
    assert "2504.11302" not in [i for inc in b.increments for i in inc.arxiv]


def test_a_venue_shared_by_two_rows_is_not_a_title() -> None:
    # shaped: the daily paper table of issue 11, with ids and titles of the KV-cache list (items 94 and 75)
    table = note(
        "inbox/jay/2026-09-27-1000-table.md",
        "# KV cache 论文表\n\n## 新论文\n| arXiv | Venue | Title |\n|---|---|---|\n"
        "| 2504.15364 | NeurIPS 2025 Spotlight | KeyDiff: Key Similarity-Based KV Cache Eviction |\n"
        "| 2503.08879 | NeurIPS 2025 Spotlight | LLMs Know What to Drop |\n",
    )
    assert id_conflicts(table.titled or (), "zh") == []


def test_a_contribution_sentence_is_not_a_second_title() -> None:
    # real: en_arxiv_zl-asica/2025-09-12.md item [1], its title and its TL;DR put in a table's second column
    stated = [
        TitledId(
            id="2509.08915",
            title="A Contextual Bandits Approach for Personalization of Hand Gesture Recognition",
            source="paper_cards/0001-2509-08915.md",
            strong=True,
        ),
        TitledId(
            id="2509.08915",
            title="This paper presents a calibrationless longitudinal personalization method for hand gesture "
            "recognition using a contextual multi-arm bandit algorithm",
            source="inbox/tom/2026-09-27-1000-digest.md#Contributions",
            strong=True,
        ),
    ]
    assert id_conflicts(stated, "zh") == []


def test_a_writer_s_short_name_for_a_paper_is_not_a_second_title() -> None:
    # real: item 28 of the KV-cache list; shaped: a note heading naming it the way writers do
    stated = [
        TitledId(
            id="2407.02490",
            title="MInference 1.0: Accelerating Pre-filling for Long-Context LLMs via Dynamic Sparse Attention",
            source="living/inference.md#§3.3",
            strong=True,
        ),
        TitledId(
            id="2407.02490",
            title="动态稀疏注意力 MInference 加速 prefill",
            source="inbox/a.md#x",
            strong=True,
        ),
        TitledId(
            id="2407.02490",
            title="Sparse prefill kernels for million-token prompts",
            source="inbox/b.md#y",
            strong=True,
        ),
    ]
    assert id_conflicts(stated, "zh") == []


def test_one_id_under_two_real_titles_in_the_living_document_is_flagged() -> None:
    # real: items 17 and 18 of "Pruning / Evicting / Sparse" in the KV-cache list both link arXiv 2406.12335
    doc = note("living/inference.md", KV_LIST.read_text(encoding="utf-8"))
    items = id_conflicts(list(doc.titled or ()), "en")
    (item,) = [i for i in items if i.key == "id-titles:2406.12335"]
    assert item.subject == "arXiv 2406.12335 under two titles"
    assert {c.text.split(" (arXiv")[0][:20] for c in item.claims} == {
        "Attention Score is n",
        "On the Efficacy of E",
    }
    assert [i.key for i in items] == [
        "id-titles:2406.12335"
    ]  # no venue, author list or badge read as a title


def test_a_note_citing_a_living_document_paper_under_another_id_is_a_d_item_not_a_new_paper() -> None:
    # real: item 28 of the KV-cache list; shaped: a note citing it with two digits swapped
    typo = minference_note("2407.02940")
    b = brief([typo], living_doc=living(MINFERENCE_LISTED))
    (item,) = [d for d in b.discrepancies if d.kind == "arxiv_id_conflict"]
    assert item.key == "ids:2407.02490|2407.02940"
    assert "2407.02940" not in [i for inc in b.increments for i in inc.arxiv]
    listed_typo = [a for a in b.arxiv if a.id == "2407.02940"]
    assert all(item.id in a.credibility and "2407.02490" in a.credibility for a in listed_typo)


def test_a_typo_dated_after_its_note_is_one_discrepancy_told_by_the_right_id() -> None:
    # real: item 28 of the KV-cache list; shaped: a note citing it as 2610.02490, a month after the note's
    typo = minference_note("2610.02490")
    earlier = brief([typo], living_doc=living(MINFERENCE_LISTED))
    assert [d.key for d in earlier.discrepancies] == ["ids:2407.02490|2610.02490"]
    # A later flush: the first briefing listed the typo in 四, which does not make it the right id.
    again = brief([typo], living_doc=living(MINFERENCE_LISTED), earlier=sorted(cited_ids_of(earlier)))
    assert [d.key for d in again.discrepancies] == ["ids:2407.02490|2610.02490"]
    # 四 still marks the typo (and only the typo), though the first briefing made it "continued".
    marks = {a.id: "2407.02490 的笔误" in a.credibility for a in again.arxiv}
    assert marks == {"2610.02490": True}


def test_an_id_from_a_later_month_than_its_note_is_flagged() -> None:
    (item,) = [d for d in _items() if d.kind == "future_arxiv_id"]
    assert "2610.00123" in item.subject and item.key == "future:2610.00123"


def test_flagged_claims_are_d_items_with_their_own_subject() -> None:
    kinds = {d.kind: d for d in _items()}
    assert "DSpark" in kinds["flagged"].claims[0].text
    assert kinds["flagged"].subject == "作者标注待核实：DSpark 投机解码 85% 加速"


def test_unsourced_figures_are_d_items() -> None:
    assert any("EAGLE 2-4×" in c.text for d in _items() if d.kind == "unsourced_claim" for c in d.claims)


def test_a_flag_in_a_chosen_note_is_a_d_item_in_either_language() -> None:
    doc = note(
        "inbox/spark/2026-09-27-1000-kr.md",
        "# KV 캐시 일일 리포트\n\n## vLLM 추론\n- vLLM KV cache 오프로딩 처리량 3.2× 향상 (확인 필요)\n",
    )
    (item,) = flagged_and_unsourced(_units(doc), {}, "en")
    assert item.subject == "marked to verify by its writer: vLLM KV cache 오프로딩 처리량 3.2× 향상"
    assert item.key.startswith("flagged:inbox/spark/2026-09-27-1000-kr.md:")


def test_a_paper_summary_s_figures_are_the_paper_s_own_not_unsourced() -> None:
    # real: en_arxiv_zl-asica/2025-09-10.md item [65] (its heading's arXiv link is lost by today's parser)
    dovetail = note(
        "inbox/tom/2026-09-27-1000-digest.md",
        "# Daily\n\n### [65] [Dovetail: A CPU/GPU Heterogeneous Speculative Decoding for LLM inference]"
        "(https://arxiv.org/abs/2412.18934)\n\n**TL;DR:** Dovetail is a lossless inference acceleration method for "
        "large language models that optimally utilizes CPU and GPU resources to improve performance on "
        "consumer-grade devices.\n\n**Result:** Dovetail achieves inference speedups ranging from 1.79x to 10.1x on "
        "various consumer-grade GPUs, showing consistent and stable output generation across different tasks and "
        "models.\n",
    )
    # real: zh_hf_2404589803/final/2025-01-22_daily_paper.md item 2, cut to its last sentence
    agent_r = note(
        "inbox/jay/2026-09-27-1000-daily.md",
        "# Hugging Face 2025-01-22 论文日报\n\n### 2. Agent-R：通过迭代自训练训练语言模型代理进行反思\n\n"
        "**原文标题：** Agent-R: Training Language Model Agents to Reflect via Iterative\n  Self-Training\n\n"
        "**摘要：**\n在三个交互环境中的实验表明，Agent-R有效地使代理能够纠正错误行为，同时避免循环，"
        "与基线方法相比实现了更优的性能（+5.59%）。\n",
    )
    assert flagged_and_unsourced(_units(dovetail, agent_r), {}, "zh") == []


def test_an_unsourced_item_names_its_figures_in_reading_order_whatever_the_hash_seed() -> None:
    # Ordered by their place in the first line only, the figures of later lines came first, in set order:
    # `60% / 2.5倍 / 4.2× / 12%` in one run, `12% / 4.2× / 18% / 2.5倍` in another (PYTHONHASHSEED).
    doc = note(
        "inbox/jay/2026-09-27-1000-figs.md",
        "# 推理观察\n\n## 推理吞吐\n- 新调度器让 vLLM 吞吐提升 35%。\n"
        "- 显存占用降至 60%，TTFT 缩短 4.2×，P99 下降 18%。\n- 长上下文下加速 2.5 倍，成本减少 12%。\n",
    )
    (item,) = flagged_and_unsourced(_units(doc), {}, "en")
    assert "'35% / 60% / 4.2× / 18%: source to verify'" in item.suggestion


def test_a_release_written_with_emphasis_or_code_marks_inside_is_still_read() -> None:
    # shaped: the same claims as above, the release's parts bold or in code: the lines are cleaned before
    # they are read, and a line is passed over only when no cleaning could make a release of it.
    jay = note(
        "inbox/jay/2026-09-27-1000-a.md", "# 推理\n\n## 引擎\n- **LMDeploy** v**0**.7.3 部署 Qwen 推理\n"
    )
    tom = note("inbox/tom/2026-09-27-1100-b.md", "# 推理\n\n## 引擎\n- `LMDeploy` 0.`2`.6 部署推理\n")
    (item,) = version_conflicts(_units(jay, tom), parse_living_doc(living()), "en")
    assert item.key == "version:lmdeploy:0.2.6|0.7.3"
    plain = note("inbox/tom/2026-09-27-1200-c.md", "# 推理\n\n## 引擎\n- LMDeploy 0__.2__.6 部署推理\n")
    assert version_conflicts(_units(jay, plain), parse_living_doc(living()), "en")[0].key == item.key


def test_a_flag_stated_in_two_notes_of_a_folder_named_with_a_hash_is_a_d_item_of_each() -> None:
    # The key took the ref up to its first `#`: both notes were `inbox/C`, their flags one D-item citing both.
    flag = "- DSpark 投机解码 85% 加速 ⚠ 待核实\n"
    a = note(
        "inbox/C#/2026-09-27-1000-a.md", "# CSDN 推理\n\n## 投机解码\n- EAGLE 2-4× 加速 vLLM 推理\n" + flag
    )
    b = note(
        "inbox/C#/2026-09-27-1100-b.md", "# 知乎 推理\n\n## 服务\n- vLLM 0.3.3 生产验证推理服务\n" + flag
    )
    flagged = [d for d in brief([a, b]).discrepancies if d.kind == "flagged"]
    assert [[c.source for c in d.claims] for d in flagged] == [[f"{a.path}#投机解码"], [f"{b.path}#服务"]]
    assert [(d.key or "").rsplit(":", 1)[0] for d in flagged] == [f"flagged:{a.path}", f"flagged:{b.path}"]
