"""A window holding the hostile notes of issue 15 briefs in seconds and bounded memory, and still lists each note.

The red team's window of such files took minutes per axis, gave 31,125 D-items and an 8.9 MB Markdown. The bounds
are on what the briefing holds (items, ids, bytes) and on memory; time has only the module's hang guard (the brief
takes ~7 s; how briefing time grows is measured by `make bench`).
"""

from __future__ import annotations

import resource

import pytest

from processors.arxiv_ids import MAX_LISTED_IDS_PER_NOTE
from processors.discrepancies import MAX_ITEMS
from processors.models import Document
from processors.render_markdown import render_markdown
from tests.processors.notes import SH, brief, note

# A hang guard, not a figure: slower than a unit test by design (worst-case inputs), minutes before the caps.
pytestmark = pytest.mark.timeout(120)


def ident(n: int, yymm: str) -> str:
    return f"{yymm}.{10000 + n:05d}"


def _titles() -> str:
    lines = ["# vLLM 推理 KV cache 论文表", "", "## 同名论文", "| arXiv | Title |", "|---|---|"]
    lines += [
        f"| {ident(n, '2606')} | Fluid-Guided Online Scheduling for LLM Inference |" for n in range(500)
    ]
    lines += ["", "## 一号多名", "| arXiv | Title |", "|---|---|"]
    lines += [f"| 2609.00001 | Kernel{n} Fusion{n} for Decoding{n} Serving{n} |" for n in range(2000)]
    lines += [
        f"- [Cache{n} Eviction{n} Policy{n}](https://arxiv.org/abs/{ident(n, '2605')})" for n in range(2000)
    ]
    return "\n".join(lines) + "\n"


def _digest() -> str:
    return "# 每日 arXiv 推理 digest\n\n" + "\n".join(
        f"## {n + 1}. KV Cache Method {n} for LLM Serving\narXiv:{ident(n, '2604')}\n"
        f"- vLLM 推理 TTFT 降低 {n % 50 + 1}%，吞吐提升 {n % 5 + 1}.{n % 9}×\n"
        for n in range(250)
    )


def hostile_window() -> list[Document]:
    one_line = " ".join(f"arXiv:{ident(n, '2608')}" for n in range(10_000))
    many = "\n".join(" ".join(f"arXiv:{ident(i * 10 + j, '2607')}" for j in range(10)) for i in range(5000))
    sections = "\n".join(
        f"## {ident(n, '2609')} KV cache 压缩 {n}\n- vLLM 推理吞吐提升 {n % 9 + 1}.{n % 7}×\n"
        for n in range(5000)
    )
    quoted = "\n".join(">" * (i % 40 + 1) + f" vLLM 推理 {i}" for i in range(50_000))
    return [
        note("inbox/jay/2026-09-27-0900-line.md", f"# 推理 vLLM\n\n{one_line}\n"),
        note("inbox/tom/2026-09-27-0910-ids.md", f"# 推理 id 列表\n\n{many}\n"),
        note("inbox/flyp/2026-09-27-0920-sections.md", f"# vLLM 推理 KV cache 论文\n\n{sections}"),
        note("inbox/spark/2026-09-27-0930-titles.md", _titles()),
        note(
            "inbox/stephen/2026-09-27-0940-nested.md",
            "# vLLM 推理 引用\n\n" + "> " * 50_000 + "KV cache 3.8×\n",
        ),
        note("inbox/stephen/2026-09-27-0945-quoted.md", f"# vLLM 推理 引用\n\n{quoted}\n"),
        note("inbox/jay/2026-09-27-0950-digest.md", _digest()),
        note("inbox/tom/2026-09-27-1000-a\nb.md", "# SGLang 推理\nspeculative decoding serving 2×\n"),
        note(
            "inbox/tom/2026-09-27-1010-\u202egnp.exe\u200f.md",
            "# \u202e vLLM 推理\u200f\nKV cache serving 12%\n",
        ),
        note(
            "inbox/spark/2026-09-27-1200-mooncake.md",
            "# Mooncake\n\n## 2.4 llm-d × vLLM × Mooncake\n来源：https://arxiv.org/html/2609.23130v1\n"
            "- Mooncake KV cache 持久化：Cache hit 从 1.7% 升至 92.2%；吞吐量提升 3.8×\n",
        ),
    ]


def test_a_window_of_hostile_notes_briefs_within_bounded_output_and_memory_and_lists_every_note() -> None:
    docs = hostile_window()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    b = brief(docs)
    markdown = render_markdown(b, lang="zh", zone=SH)
    # Peak resident memory is set by what the pass builds, not by other processes' load.
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024

    assert grown_mib < 1024, grown_mib  # 4.5 GB before
    assert len(markdown.encode()) < 1_000_000 and len(b.model_dump_json().encode()) < 2_000_000
    assert len(b.discrepancies) <= MAX_ITEMS and 3 <= len(b.increments) <= 8
    assert len(b.arxiv) <= len(docs) * MAX_LISTED_IDS_PER_NOTE

    sources = {s.path: s for s in b.sources}
    assert set(sources) == {d.path for d in docs}  # every note accounted for, odd names included
    for path in [d.path for d in docs if len(d.arxiv_ids) > MAX_LISTED_IDS_PER_NOTE]:
        assert sources[path].warning_codes == ("many_ids",), path
        assert f"a briefing lists the first {MAX_LISTED_IDS_PER_NOTE}" in sources[path].warnings[0]
    digest = next(d for d in docs if d.path.endswith("digest.md"))
    assert sources[digest.path].warnings == ()  # a digest of 250 papers is listed whole
    assert set(digest.arxiv_ids) <= {e.id for e in b.arxiv}
    # 五 lists each note; a newline in a name is shown as a space, a bidi control as a visible escape.
    for d in docs:
        shown = d.path.replace("\n", " ").replace("\u202e", "\\u202e").replace("\u200f", "\\u200f")
        assert f"- {shown}（" in markdown, shown
    assert "\u202e" not in markdown and "\u200f" not in markdown
