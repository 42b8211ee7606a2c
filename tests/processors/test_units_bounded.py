"""Units stay bounded per note (issue 15): 5,000 sections carrying ids, or 50,000 ids, cannot stall a briefing.

The bounds are counts (what a note can put in front of clustering); time has only a hang guard against a return of
the quadratic passes (a first draft took minutes on the 50,000 ids; each test takes seconds at most now).
"""

from __future__ import annotations

import pytest

from processors.units import MAX_PAPERS_PER_SECTION, MAX_UNITS_PER_NOTE, units_of
from tests.processors.notes import brief, note

pytestmark = pytest.mark.timeout(60)  # a hang guard, not a figure


def ident(n: int, yymm: str = "2609") -> str:
    return f"{yymm}.{10000 + n:05d}"


SECTIONS = note(
    "inbox/jay/2026-09-27-1000-sections.md",
    "# vLLM 推理 KV cache 论文\n\n"
    + "\n".join(
        f"## {ident(n)} KV cache 压缩 {n}\n- vLLM 推理吞吐提升 {n % 9 + 1}.{n % 7}×\n" for n in range(5000)
    ),
)
IDS = note(
    "inbox/tom/2026-09-27-1100-ids.md",
    "# 推理 id 列表\n\n## 全部\n"
    + " ".join(f"arXiv:{ident(n % 89999, '2608')}" for n in range(50_000))
    + "\n",
)
ROWS = note(
    "inbox/flyp/2026-09-27-1130-rows.md",
    "# 表\n\n## Papers\n| arXiv | Title |\n|---|---|\n"
    + "\n".join(f"| {ident(n, '2607')} | KV Cache Eviction Method {n} |" for n in range(3000))
    + "\n\n## 部署\n- vLLM 0.6.3 推理吞吐 12%\n",
)
MOONCAKE = note(
    "inbox/spark/2026-09-27-1200-mooncake.md",
    "# Mooncake\n\n## 2.4 llm-d × vLLM × Mooncake\n来源：https://arxiv.org/html/2609.23130v1\n"
    "- Mooncake KV cache 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×\n",
)


def test_a_note_of_5000_paper_sections_gives_at_most_the_note_cap() -> None:
    units = units_of(SECTIONS, "inference", 5, 1.0)
    assert len(units) == MAX_UNITS_PER_NOTE
    assert units[0].primary_ids == (ident(0),) and units[-1].primary_ids == (ident(MAX_UNITS_PER_NOTE - 1),)


def test_50000_ids_in_a_paragraph_are_no_paper_and_a_long_table_is_capped_per_section() -> None:
    assert [u.primary_ids for u in units_of(IDS, "inference", 5, 1.0)] == []  # a list, not one paper
    rows = units_of(ROWS, "inference", 5, 1.0)
    assert sum(u.shape == "row" for u in rows) == MAX_PAPERS_PER_SECTION
    assert rows[-1].ref.endswith("#部署")  # the sections after a long table are still read


def test_a_window_holding_them_still_briefs_and_accounts_for_every_note() -> None:
    b = brief([SECTIONS, IDS, ROWS, MOONCAKE])
    assert 3 <= len(b.increments) <= 8
    seen = {s.path for s in b.sources}
    assert {SECTIONS.path, IDS.path, ROWS.path, MOONCAKE.path} <= seen
