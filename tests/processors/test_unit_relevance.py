"""Relevance per unit: a mixed digest contributes only its on-axis papers, whatever its note's relevance.

Real notes: the Chinese newsletters (tests/corpus/daily_digests/zh_hf_2404589803) under the multimodal and
reasoning axes of the quality root r2 (keywords only), stephen's reading note of that root
(bench/quality/roots/r2/stephen_llm_thinking_0813.md.j2), and the example root.
"""

from __future__ import annotations

from pathlib import Path

from processors.models import AxisSpec, Document
from processors.relevance import AxisSpace
from processors.unit_relevance import MAX_WINDOW_UNITS, WeighedUnits, weigh_units
from processors.units import Unit, units_of
from tests.processors.notes import AXES, living, note

ZH_DAILY = Path(__file__).parents[1] / "corpus" / "daily_digests" / "zh_hf_2404589803" / "final"
R2_AXES = (
    AxisSpec(
        name="multimodal", keywords=("multimodal", "多模态", "vision-language", "视觉语言", "video", "视频")
    ),
    AxisSpec(name="reasoning", keywords=("reasoning", "推理", "chain-of-thought", "思维链")),
)
STEPHEN = """# 读书笔记：LLM 的“深度思考”两篇

## Kimi k1.5: Scaling Reinforcement Learning with LLMs（arXiv:2501.12599）

- 长上下文强化学习：上下文窗口扩到 128k，效果随之继续提升。
- 短答案模型也能从长答案模型蒸馏受益（long2short）；AIME 上的具体数字需核实。
"""


def _newsletter(day: str, path: str) -> Document:
    return note(path, (ZH_DAILY / f"{day}_daily_paper.md").read_text(encoding="utf-8"))


def _weigh(docs: list[Document], axis: str, axes: tuple[AxisSpec, ...] = R2_AXES) -> WeighedUnits:
    space = AxisSpace(docs, axes, {})
    units = [u for d in docs for u in units_of(d, axis, 5, 1.0)]
    return weigh_units(units, space, axis, (set(), lambda _text: False))


def _titles(units: list[Unit]) -> set[str]:
    return {u.heading for u in units}


def test_a_mixed_newsletter_contributes_only_its_on_axis_papers() -> None:
    day = _newsletter("2025-01-13", "inbox/jay/2026-08-12-0900-hf-zh-daily.md")
    weighed = _weigh([day], "multimodal")
    on = _titles(weighed.on_axis)
    assert "1. VideoRAG：基于视频语料库的检索增强生成" in on
    assert "2. 通过自进化批评者实现可扩展监督" not in on  # scalable oversight: no video, no modality
    assert len(weighed.on_axis) < len(weighed.considered)


def test_a_keyword_in_passing_is_no_evidence_and_a_cjk_keyword_is_matched_whole() -> None:
    day = _newsletter("2025-01-10", "inbox/flyp/2026-08-11-1100-hf-zh-daily.md")
    weighed = _weigh([day], "multimodal")
    turkish = next(u for u in weighed.considered if "土耳其" in u.heading)
    # `自然语言处理` shares the bigram `语言` with the keyword `视觉语言`: no evidence at all
    assert turkish.relevance == 0.0 and turkish not in weighed.on_axis
    assert "5. Centurio：大型视觉语言模型多语言能力的驱动因素研究" in _titles(weighed.on_axis)


def test_a_paper_on_the_axis_in_one_note_brings_a_note_about_it_that_names_no_keyword() -> None:
    day = _newsletter("2025-01-23", "inbox/jay/2026-08-13-1600-hf-zh-daily.md")
    reading = note("inbox/stephen/2026-08-13-1500-llm-thinking-notes.md", STEPHEN)
    alone = _weigh([reading], "reasoning")
    assert alone.on_axis == []  # reinforcement learning, long2short: no reasoning keyword
    together = _weigh([day, reading], "reasoning")
    kimi = [u for u in together.on_axis if u.primary_ids == ("2501.12599",)]
    assert {u.doc_path for u in kimi} == {reading.path, day.path}
    assert "2501.12948" in {i for u in together.on_axis for i in u.primary_ids}  # DeepSeek-R1


def test_an_off_topic_section_of_an_on_topic_note_drops_out() -> None:
    text = (  # real: examples/root, jay's security note (its first section, and its InferenceBench section)
        "# jay 安全 × 推理 × RAG 技术栈 9-27\n\n## 1. OpenAI HF 入侵事件\n"
        "OpenAI 在 Hugging Face 上的组织账号被入侵，攻击者上传了带后门的模型权重；影响面待官方通报。\n"
        "攻击发生在 2026-09-26，涉及 3 个模型仓库。\n\n### 2.1 InferenceBench\n"
        "arXiv:2607.20468 提出 InferenceBench，测量端到端的 LLM 推理服务器部署和优化能力。\n"
        "- 实验对象：Claude Code 2.1.114、Codex CLI 0.125.0，在 vLLM 和 SGLang 上执行优化任务\n"
    )
    weighed = _weigh([note("inbox/jay/2026-09-27-1335-jay.md", text)], "inference", AXES)
    assert [u.primary_ids for u in weighed.on_axis] == [("2607.20468",)]


def test_a_section_written_like_a_living_document_section_needs_no_keyword() -> None:
    dspark = note(  # the D-item tests' CSDN note: `投机解码` where the keyword is `speculative`
        "inbox/jay/2026-09-27-1020-csdn.md", "# CSDN\n\n## 投机解码\n- DSpark 投机解码 85% 加速 ⚠ 待核实\n"
    )
    space = AxisSpace([dspark], AXES, {"inference": living()})
    units = units_of(dspark, "inference", 4, 0.5)
    closed = weigh_units(units, space, "inference", (set(), lambda _text: False))
    assert closed.on_axis == []
    near = weigh_units(units, space, "inference", (set(), lambda text: "投机解码" in text))
    assert len(near.on_axis) == 1


def test_the_units_going_on_to_clustering_are_bounded_and_the_most_relevant() -> None:
    rows = "\n".join(
        f"| 26{n // 1000 + 1:02d}.{n % 1000:05d} | Paper {n} on {'KV cache eviction for vLLM inference serving' if n % 2 else 'gardening'} |"
        for n in range(3 * MAX_WINDOW_UNITS)
    )
    docs = [
        note(
            f"inbox/jay/2026-09-27-{h:02d}00-table.md",
            f"# 表\n\n## Papers\n| arXiv | Title |\n|---|---|\n{rows}\n",
        )
        for h in range(10, 22)
    ]
    weighed = _weigh(docs, "inference", AXES)
    assert len(weighed.on_axis) == MAX_WINDOW_UNITS
    assert all("KV cache" in u.text for u in weighed.on_axis)


DETOKENIZATION = (  # real: examples/root, jay's security note, its `安全事件关联` section
    "## 安全事件关联\nDetokenization Leaks（arXiv 2609.06674）：共享后端（Ollama / LM Studio）时，detokenization "
    "时间可作为侧信道泄露其他用户的 LLM 输出。\n- Ollama 5200 万次/月下载受影响\n"
    "- 加密通信无法防御：攻击针对推理引擎内部的 detokenization 延迟，而非网络层\n"
)
LONG_AND_SHORT = (  # two on-axis sections of the same note make the window's average unit short
    "## 2.2 Dell KV Cache 综述\narXiv:2603.20397 Dell 的 KV Cache 管理综述，按淘汰、量化、卸载三类整理。\n\n"
    "## 2.3 LLM Serving 需要数学优化\narXiv:2605.01280 主张用数学规划做 serving 调度。\n\n"
)


def test_a_note_filed_under_the_axis_vouches_for_a_section_that_names_it_once() -> None:
    filed = note(
        "inbox/jay/2026-09-27-1335-jay.md",
        "---\ntitle: jay 安全 × 推理 × RAG 技术栈 9-27\naxes: [inference, risk]\n---\n# jay 安全 × 推理 × RAG 技术栈 9-27\n\n"
        + LONG_AND_SHORT
        + DETOKENIZATION,
    )
    loose = note("inbox/jay/2026-09-27-1336-misc.md", "# 杂记\n\n" + LONG_AND_SHORT + DETOKENIZATION)
    assert ("2609.06674",) in [u.primary_ids for u in _weigh([filed], "inference", AXES).on_axis]
    # the same section, in a note neither declaring nor naming the axis: one `推理` in passing
    assert ("2609.06674",) not in [u.primary_ids for u in _weigh([loose], "inference", AXES).on_axis]
