from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing
from processors.models import AxisSpec, Briefing, Document, Kind, Section
from processors.render_markdown import esc, render_markdown
from processors.window import window_bounds

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
WINDOW = window_bounds(END, timedelta(hours=24))
AXIS = AxisSpec(
    name="inference", keywords=("vllm", "kv cache", "inference"), living_doc="living/inference.md"
)


def doc(
    path: str,
    *,
    hour: int = 12,
    kind: Kind = "inbox",
    ids: Sequence[str] = (),
    text: str | None = None,
    text_hash: str | None = None,
    sections: Sequence[Section] = (),
    title: str = "note",
    day: int = 27,
    **extra: object,
) -> Document:
    body = text if text is not None else " ".join(f"arXiv:{i}" for i in ids) + " vllm inference"
    return Document(
        path=path,
        sha256=path,
        writer=path.split("/")[1] if path.startswith("inbox/") else None,
        kind=kind,
        event_time=datetime(2026, 9, day, hour, 0, tzinfo=SH),
        bytes=13 * 1024,
        title=title,
        sections=tuple(sections) or (Section(number="§1", heading=title, level=2, text=body),),
        arxiv_ids=tuple(ids),
        text=body,
        text_hash=text_hash or path,
        **extra,
    )


def living() -> Document:
    return doc(
        "living/inference.md",
        kind="living",
        ids=("2511.01815",),
        sections=(
            Section(
                number="§3.3",
                heading="§3.3 Cache Compression",
                level=3,
                text="KVTC arXiv:2511.01815 kv cache",
            ),
            Section(number="§1.1", heading="§1.1 框架格局", level=3, text="vllm sglang scheduler"),
        ),
        version="v3.44",
    )


def build(docs: Sequence[Document], **kw: object) -> Briefing:
    args: dict[str, object] = {
        "axis": AXIS,
        "trigger": "close",
        "window": WINDOW,
        "generated_at": END,
        "documents": docs,
        "living": living(),
        "earlier_cited_ids": set(),
        "zone": SH,
    }
    args.update(kw)
    return assemble_briefing(**args)  # type: ignore[arg-type]


ZH_HEADINGS = [
    "状态摘要",
    "一、检查过的来源清单",
    "二、增量条目",
    "三、值得警惕的矛盾或待核实说法",
    "四、可引用 arXiv 号列表",
    "五、检查过的来源汇总（可审计）",
    "六、本次无显著新增量的来源说明",
    "七、建议今晚 E2 活文档更新优先级",
]
EN_HEADINGS = [
    "Status summary",
    "1. Sources checked",
    "2. Increments",
    "3. Contradictions and claims to verify",
    "4. Citable arXiv ids",
    "5. Audit list of sources",
    "6. Sources without a significant increment",
    "7. Recommended E2 update priorities",
]


def sample() -> str:
    sec = Section(
        number="§2.4",
        heading="Mooncake arXiv 2609.23130",
        level=3,
        text="- Cache hit 1.7%→92.2% ⚠ 待核实\n- 吞吐 3.8×",
    )
    note = doc("inbox/jay/2026-09-27-1335-x.md", ids=("2609.23130", "2511.01815"), sections=(sec,))
    dup = doc("inbox/tom/y.md", hour=14, text_hash=note.text_hash)
    small = doc("inbox/jay/z.md", hour=15).model_copy(update={"bytes": 6963})
    return render_markdown(build([note, dup, small], last_d_number=194), zone=SH)


def positions(md: str, headings: list[str]) -> list[int]:
    return [md.index(f"## {h}\n") for h in headings]


def test_zh_headings_in_order_and_content() -> None:
    md = sample()
    assert md.splitlines()[0] == "# inference · E1 预消化简报(2026-09-27)"
    pos = positions(md, ZH_HEADINGS)
    assert pos == sorted(pos)
    assert "2026-09-26 22:20 ~ 2026-09-27 22:20 滑动窗口" in md
    assert "### 增量 1：arXiv 2609.23130 — Mooncake arXiv 2609.23130（⭐⭐⭐⭐）" in md
    assert "| inbox/jay | 2026-09-27-1335-x.md（note） | 12:00 · 13KB |" in md
    assert "6.8KB" in md
    assert "| 2511.01815 | note |" in md
    assert "重复（与 inbox/jay/2026-09-27-1335-x.md 重复）" in md
    assert "### D195：" in md
    assert "🔴 最高" in md and "🟢 低" in md
    footer = md.strip().splitlines()[-1]
    assert footer == (
        "本报告由 predigest 自动生成 · 2026-09-27 22:20 · 增量条目：2 条 · 涉及 arXiv 号：本次新增 1 个；"
        "续用锚定 1 个 · 来源 3 个（重复 1，拒收 0）"
    )


def test_en_headings_and_labels() -> None:
    note = doc("inbox/jay/a.md", ids=("2609.23130",), text="vllm vllm vllm inference kv cache 2609.23130")
    md = render_markdown(build([note]), lang="en", zone=SH)
    pos = positions(md, EN_HEADINGS)
    assert pos == sorted(pos)
    assert "very high ⭐⭐⭐⭐⭐" in md
    assert "极高" not in md and "状态摘要" not in md


def test_escaping_title() -> None:
    bad = doc("inbox/jay/a.md", title="<script>alert(1)</script> a|b\nc", ids=("2609.23130",))
    md = render_markdown(build([bad]), zone=SH)
    assert "<script>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; a\\|b c" in md
    for line in md.splitlines():
        if line.startswith("| inbox/jay"):
            assert line.replace("\\|", "").count("|") == 6


def test_esc() -> None:
    assert esc("a & b\n| <i>") == "a &amp; b \\| &lt;i&gt;"


def test_empty_window() -> None:
    b = build([], living=None, window=WINDOW.model_copy(update={"end": END + timedelta(days=1)}))
    md = render_markdown(b, zone=SH)
    pos = positions(md, ZH_HEADINGS)
    assert pos == sorted(pos)
    assert md.count("（本窗口无来源）") >= 7
    assert "来源 0 个（重复 0，拒收 0）" in md
    en = render_markdown(b, lang="en", zone=SH)
    assert en.count("(none in this window)") >= 7
    assert positions(en, EN_HEADINGS) == sorted(positions(en, EN_HEADINGS))
