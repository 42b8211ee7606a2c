"""D-items: each detector, and numbering that continues the axis's series."""

from tests.processors.notes import brief, note

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


def _items():
    return brief([BASELINE, VERSIONS, TYPO, FUTURE]).discrepancies


def test_a_version_that_disagrees_with_the_living_document_is_flagged_but_constraints_are_not() -> None:
    versions = [d for d in _items() if d.kind == "version_conflict"]
    assert [d.subject for d in versions] == ["vLLM 0.3.3 与 v0.30.0 版本号差异"]
    assert versions[0].claims[1].source == "§1.1"
    assert "§1.1" in versions[0].suggestion


def test_the_same_title_under_two_ids_is_flagged() -> None:
    (item,) = [d for d in _items() if d.kind == "arxiv_id_conflict"]
    assert "2504.11320 / 2504.11302" in item.subject


def test_an_id_from_a_later_month_than_its_note_is_flagged() -> None:
    (item,) = [d for d in _items() if d.kind == "future_arxiv_id"]
    assert "2610.00123" in item.subject


def test_flagged_claims_and_unsourced_figures_are_listed() -> None:
    kinds = {d.kind: d for d in _items()}
    assert "DSpark" in kinds["flagged"].claims[0].text
    assert any("EAGLE 2-4×" in c.text for d in _items() if d.kind == "unsourced_claim" for c in d.claims)


def test_d_numbers_continue_after_the_highest_the_baseline_used() -> None:
    items = _items()
    assert [d.id for d in items] == [f"D{195 + n}" for n in range(len(items))]
    assert [d.kind for d in items][:3] == ["version_conflict", "arxiv_id_conflict", "future_arxiv_id"]


def test_a_typo_of_an_anchored_id_is_not_promoted_as_a_new_paper() -> None:
    b = brief([BASELINE, VERSIONS, TYPO, FUTURE])
    assert "2504.11302" not in [i for inc in b.increments for i in inc.arxiv]
