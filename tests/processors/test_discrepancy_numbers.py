"""D numbers last: the same discrepancy keeps its number across flushes and days; new ones continue after the
highest any briefing used, whatever language the briefings were written in."""

from datetime import timedelta

from processors.briefing_request import BriefingHistory
from processors.discrepancy_keys import key_from_subject, keys_in_text, ordered_span
from processors.models import Briefing, Discrepancy
from tests.processors.notes import END, brief, example_documents, note

# real: the D lines of the example briefing (shared/seed/000_97cec38b0b88da0d.txt), written by another system
SEED = """inference · E1 预消化简报(2026-09-27)

三、值得警惕的矛盾或待核实说法

D195：vLLM 0.3.3 与 v0.30.0 版本号差异（⭐⭐⚬）
D196：DSpark 85% 加速数字来源（⭐⭐⚬）
D197：InferenceBench 2607.20468 统计显著性（⭐⭐⚬）
D198：Mooncake 92.2% Cache hit 在不同 prefix 复用率下的鲁棒性（⭐⭐⚬）
D199：DeepSeek-V4.1-Flash arXiv 2609.19969 论文详情待核（⭐⭐⚬）

🟢 低 D195-D199 矛盾/待核实标注（vLLM 版本号差异 / DSpark 85% 来源） §附录标注
"""
BASELINE = note(
    "inbox/tom/2026-09-26-inference-e1prep.md",
    "# inference · E1 预消化简报(2026-09-26)\n\n## 三\nD193：x\nD194：y\n\n## 四\n"
    "| arXiv 号 | 标题 |\n|---|---|\n| 2504.11320 | Fluid-Guided Online Scheduling |\n",
)
# real: examples/root inbox/jay 1620 (the seed's vLLM and DSpark lines)
VERSIONS = note(
    "inbox/jay/2026-09-27-1020-csdn.md",
    "# CSDN 推理\n\n## vLLM 生产 10 大坑\n- vLLM 0.3.3（2026-Q2 生产验证）推理服务\n\n"
    "## 投机解码\n- DSpark 投机解码 85% 加速 ⚠ 待核实\n",
)
TYPO = note(
    "inbox/jay/2026-09-27-1440-radar.md",
    "# 雷达\n\n## Fluid-Guided Online Scheduling\nFluid-Guided Online Scheduling arXiv:2504.11302 讨论 LLM 推理调度。\n",
)
FUTURE = note(
    "inbox/tom/2026-09-27-1900-daily.md", "# 日报\n\n## 推理\nvLLM 推理新论文 arXiv:2610.00123 发布。\n"
)


def _numbers(b: Briefing) -> dict[str, str]:
    return {d.key or "": d.id for d in b.discrepancies}


def _history(briefings: list[Briefing], others: list[Briefing] | None = None) -> BriefingHistory:
    return BriefingHistory.of(briefings, [BASELINE.text], others or [])


def test_three_flushes_of_one_day_keep_each_discrepancy_s_number() -> None:
    first = brief([BASELINE, VERSIONS], history=_history([]), end=END - timedelta(hours=6), trigger="flush")
    second = brief(
        [BASELINE, VERSIONS, TYPO], history=_history([first]), end=END - timedelta(hours=3), trigger="flush"
    )
    third = brief([BASELINE, VERSIONS, TYPO, FUTURE], history=_history([first, second]))
    one, two, three = _numbers(first), _numbers(second), _numbers(third)
    assert sorted(one.values()) == ["D195", "D196"]  # after the baseline's D194: version conflict, flag
    assert {k: v for k, v in two.items() if k in one} == one
    assert two["ids:2504.11302|2504.11320"] == "D197"
    assert {k: v for k, v in three.items() if k in two} == two
    assert three["future:2610.00123"] == "D198"
    assert [d.id for d in third.discrepancies] == ["D195", "D196", "D197", "D198"]


def test_the_example_root_s_second_briefing_reuses_d195_to_d200() -> None:
    docs = example_documents()
    baselines = [d.text for d in docs if d.kind == "baseline"]
    first = brief(docs, history=BriefingHistory.of([], baselines))
    assert [d.id for d in first.discrepancies] == [f"D{n}" for n in range(195, 201)]
    again = brief(
        docs, history=BriefingHistory.of([first], baselines), end=END + timedelta(hours=1), trigger="flush"
    )
    assert _numbers(again) == _numbers(first)
    # A briefing recorded before keys existed: its keys are derived from its subjects and claims.
    keyless = first.model_copy(
        update={"discrepancies": [d.model_copy(update={"key": None}) for d in first.discrepancies]}
    )
    in_english = brief(
        docs, history=BriefingHistory.of([keyless], baselines), lang="en", end=END + timedelta(hours=2)
    )
    assert _numbers(in_english) == _numbers(first)


def test_a_baseline_written_elsewhere_lends_its_numbers_to_the_discrepancies_it_names() -> None:
    seed = SEED
    assert keys_in_text(seed)[:2] == [(195, "version:vllm:0.3.3|0.30.0"), (196, None)]
    docs = [d for d in example_documents() if d.kind != "baseline"]
    b = brief(docs, history=BriefingHistory.of([], [seed]))
    numbers = _numbers(b)
    assert numbers["version:vllm:0.3.3|0.30.0"] == "D195"
    assert sorted(n for k, n in numbers.items() if not k.startswith("version:")) == [
        f"D{n}" for n in range(200, 200 + len(numbers) - 1)
    ]  # the seed used D195-D199


def test_a_past_window_re_emitted_never_reuses_a_later_briefing_s_number() -> None:
    later = brief([BASELINE, VERSIONS, TYPO], history=_history([]))
    past = brief(
        [BASELINE, note("inbox/tom/2026-09-26-1900-daily.md", FUTURE.text)],
        history=_history([], [later]),
        end=END - timedelta(days=1),
    )
    assert max(int(d.id[1:]) for d in later.discrepancies) == 197
    assert [d.id for d in past.discrepancies if d.kind == "future_arxiv_id"] == ["D198"]


def test_keys_do_not_depend_on_the_language_or_the_wording() -> None:
    assert key_from_subject("vLLM 0.3.3 vs v0.30.0: version mismatch") == "version:vllm:0.3.3|0.30.0"
    assert key_from_subject("vLLM v0.30 与 0.3.3 版本号差异") == "version:vllm:0.3.3|0.30.0"
    assert (
        key_from_subject("arXiv 2610.00123 is dated after the note citing it (2026-09)")
        == "future:2610.00123"
    )
    assert key_from_subject("arXiv 2610.00123 的年月晚于引用它的文档（2026-09）") == "future:2610.00123"
    assert key_from_subject("one title 'X' under two arXiv ids 2504.11320 / 2504.11302v2") == (
        "ids:2504.11302|2504.11320"
    )
    assert key_from_subject("DSpark 85% 加速数字来源") is None


def test_the_key_is_an_optional_field_that_older_records_do_without() -> None:
    old = {"id": "D195", "kind": "flagged", "subject": "s", "claims": [], "suggestion": "x"}
    assert Discrepancy.model_validate(old).key is None
    assert ordered_span(["D195", "D196", "D197", "D201"]) == "D195-D197/D201"
