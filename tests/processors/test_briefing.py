from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing, cited_ids_of, max_d_number
from processors.models import AxisSpec, Briefing, Document, Kind, Rejection, Section
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


def test_window_filter_and_living_excluded() -> None:
    inside = doc("inbox/jay/a.md", hour=22, day=26)  # 22:00 on the 26th: before start
    at_start = Document.model_validate({**doc("inbox/jay/b.md").model_dump(), "event_time": WINDOW.start})
    at_end = Document.model_validate({**doc("inbox/jay/c.md").model_dump(), "event_time": END})
    b = build([inside, at_start, at_end, living()])
    assert [s.path for s in b.sources] == ["inbox/jay/b.md"]


def test_exact_duplicates() -> None:
    a = doc("inbox/jay/a.md", hour=10, ids=("2609.23130",), text_hash="h")
    b = doc("inbox/tom/b.md", hour=9, ids=("2609.23130",), text_hash="h")
    c = doc("inbox/tom/c.md", hour=9, ids=("2609.23130",), text_hash="h")
    br = build([a, b, c])
    by = {s.path: s for s in br.sources}
    assert by["inbox/tom/b.md"].status == "used"
    assert by["inbox/tom/c.md"].status == "duplicate"
    assert by["inbox/tom/c.md"].duplicate_of == "inbox/tom/b.md"
    assert by["inbox/jay/a.md"].duplicate_of == "inbox/tom/b.md"
    assert br.increments[0].sources == ["inbox/tom/b.md#§1"]
    reasons = {n.path: n.reason for n in br.no_increment_sources}
    assert reasons["inbox/jay/a.md"] == "与 inbox/tom/b.md 重复"


def test_superseded_and_rejected_listed() -> None:
    old = doc("inbox/jay/a.md", hour=8)
    br = build(
        [doc("inbox/jay/a.md", hour=9)], superseded=[old], rejected=[Rejection(path="x.bin", reason="binary")]
    )
    assert [s.status for s in br.sources] == ["no_increment", "superseded"]
    assert br.rejected[0].path == "x.bin"


def test_new_vs_continued() -> None:
    base = doc(
        "inbox/tom/2026-09-26-inference-e1prep.md",
        kind="baseline",
        ids=("2605.01604",),
        baseline_axis="inference",
        hour=1,
    )
    note = doc("inbox/jay/n.md", ids=("2609.23130", "2511.01815", "2605.01604", "2609.27746"), hour=5)
    br = build([base, note], earlier_cited_ids={"2609.27746"})
    assert br.summary.new_arxiv == ["2609.23130"]
    assert br.summary.continued_arxiv == ["2605.01604", "2511.01815", "2609.27746"]
    assert br.increments[0].arxiv == ["2609.23130"]
    assert br.increments[0].novelty == "new"
    statuses = {a.id: a.status for a in br.arxiv}
    assert statuses["2609.23130"] == "new" and statuses["2511.01815"] == "continued"
    base_entry = next(s for s in br.sources if s.kind == "baseline")
    assert base_entry.relevance.label == "基线"
    assert br.priorities[0].level == "highest"
    assert cited_ids_of(br) >= {"2609.23130", "2511.01815", "2605.01604", "2609.27746"}


def test_increment_fields_and_sections() -> None:
    sec = Section(
        number="§2.4",
        heading="Mooncake arXiv 2609.23130",
        level=3,
        text="- Cache hit 1.7%→92.2% kv cache\n- 吞吐 3.8×\n见 https://arxiv.org/html/2609.23130v1",
    )
    note = doc(
        "inbox/jay/n.md",
        ids=("2609.23130", "2511.01815"),
        sections=(sec,),
        text="vllm inference kv cache 2511.01815",
    )
    br = build([note])
    inc = next(i for i in br.increments if i.arxiv == ["2609.23130"])
    assert inc.title == "Mooncake arXiv 2609.23130"
    assert inc.urls == ["https://arxiv.org/html/2609.23130v1"]
    assert inc.points[:2] == ["Cache hit 1.7%→92.2% kv cache", "吞吐 3.8×"]
    assert inc.sources == ["inbox/jay/n.md#§2.4"]
    assert inc.suggested_sections == ["§3.3"]  # word overlap with the living doc
    cont = next(i for i in br.increments if i.arxiv == ["2511.01815"])
    assert cont.related_sections == ["§3.3"] and cont.novelty == "continued"


def test_paper_card_anchor_and_relevance() -> None:
    card = doc(
        "paper_cards/1417-2609-19969.md",
        kind="paper_card",
        ids=("2609.19969",),
        title="DeepSeek-V4.1-Flash",
        text="compression",
        front_matter={"primary": "llm-infra", "anchors": {"inference": "§3.6"}},
    )
    adj = doc(
        "paper_cards/1432-2609-19499.md",
        kind="paper_card",
        ids=("2609.19499",),
        front_matter={"primary": "agent"},
    )
    br = build([card, adj])
    assert br.increments[0].title == "DeepSeek-V4.1-Flash"
    assert br.increments[0].suggested_sections == ["§3.6"]
    rel = {s.path: s.relevance.label for s in br.sources}
    assert rel["paper_cards/1432-2609-19499.md"] == "邻接"
    assert len(br.increments) == 1


def test_relevance_keywords() -> None:
    hi = doc("inbox/jay/a.md", text="vllm vllm vllm inference kv cache")
    mid = doc("inbox/jay/b.md", text="vllm", hour=13)
    low = doc("inbox/jay/c.md", text="nothing", hour=14)
    br = build([hi, mid, low])
    assert [(s.relevance.label, s.relevance.stars) for s in br.sources] == [("极高", 5), ("中", 3), ("中", 3)]
    two = build([doc("inbox/jay/d.md", text="vllm inference")])
    assert two.sources[0].relevance.label == "高"


def test_discrepancies_numbering() -> None:
    note = doc("inbox/jay/n.md", ids=("2612.00001",), text="vllm 0.3.3 ⚠ 待核实\nok arXiv:2612.00001", hour=3)
    br = build([note], last_d_number=199)
    assert [d.id for d in br.discrepancies] == ["D200", "D201"]
    assert [d.kind for d in br.discrepancies] == ["flagged", "future_arxiv_id"]
    assert br.priorities[-1].level == "low"
    assert br.priorities[-1].content == "D200–D201 标注"


def test_increment_cap() -> None:
    ids = tuple(f"2609.{n:05d}" for n in range(10, 22))
    br = build([doc("inbox/jay/n.md", ids=ids)], increment_range=(3, 5))
    assert len(br.increments) == 5
    assert [i.rank for i in br.increments] == [1, 2, 3, 4, 5]
    assert len(br.arxiv) == 12


def test_empty_window() -> None:
    br = build([], living=None)
    assert br.sources == [] and br.increments == [] and br.summary.increment_count == 0
    assert br.living_doc.path == "living/inference.md" and br.living_doc.version is None


def test_max_d_number() -> None:
    assert max_d_number(["D195：x", "标注D199-D198", "ID12 AD300"]) == 199
    assert max_d_number([]) == 0
