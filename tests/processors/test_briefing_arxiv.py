"""The briefing's `arxiv` entries and Markdown with arXiv API records: titles, sources, unverified ids."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from processors.arxiv_atom import NO_RECORDS, ArxivRecord, EnrichedId
from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.models import AxisSpec, Briefing, Document, Section
from processors.render_markdown import render_markdown
from processors.window import window_bounds

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
AXIS = AxisSpec(name="inference", keywords=("vllm", "inference"), living_doc="living/inference.md")
HEAT_BATH = ArxivRecord(
    id="1605.08386",
    version=1,
    title="Heat-bath random walks with Markov bases",
    published="2016-05-26",
    primary_category="math.CO",
)


def note(path: str, ids: tuple[str, ...], heading: str) -> Document:
    body = " ".join(f"arXiv:{i}" for i in ids) + " vllm inference serving"
    return Document(
        path=path,
        sha256=path,
        writer="jay",
        kind="inbox",
        event_time=datetime(2026, 9, 27, 12, 0, tzinfo=SH),
        bytes=2048,
        title=heading,
        sections=(Section(number=None, heading=heading, level=2, text=body),),
        arxiv_ids=ids,
        text=body,
        text_hash=path,
    )


def build(records: dict[str, EnrichedId] | None = None) -> Briefing:
    docs = [note("inbox/jay/2026-09-27-1200-a.md", ("1605.08386", "2609.23130"), "笔记里写的标题")]
    return assemble_briefing(
        BriefingRequest(
            axis=AXIS,
            trigger="flush",
            window=window_bounds(END, timedelta(hours=24)),
            generated_at=END,
            zone=SH,
            documents=docs,
            arxiv_records=records if records is not None else NO_RECORDS,
        )
    )


def test_without_records_every_entry_comes_from_the_documents() -> None:
    b = build()
    # A heading over a list of two ids is the title of neither: the id stands in until the API answers.
    assert [(a.id, a.title, a.metadata.source) for a in b.arxiv] == [
        ("1605.08386", "1605.08386", "document"),
        ("2609.23130", "2609.23130", "document"),
    ]


def test_an_api_record_gives_the_title_and_metadata() -> None:
    b = build({"1605.08386": EnrichedId(record=HEAT_BATH, source="arxiv_api")})
    entry, other = b.arxiv
    assert entry.title == "Heat-bath random walks with Markov bases"
    assert entry.metadata.model_dump() == {
        "source": "arxiv_api",
        "published": "2016-05-26",
        "primary_category": "math.CO",
    }
    assert (other.title, other.metadata.source) == ("2609.23130", "document")
    assert "Heat-bath random walks with Markov bases" in [i.title for i in b.increments]


def test_a_cached_record_says_cache() -> None:
    b = build({"1605.08386": EnrichedId(record=HEAT_BATH, source="cache")})
    assert b.arxiv[0].metadata.source == "cache"


def test_markdown_marks_unverified_ids_in_table_four_and_counts_them_in_the_summary() -> None:
    md = render_markdown(build({"1605.08386": EnrichedId(record=HEAT_BATH, source="arxiv_api")}), zone=SH)
    summary = md.split("## 一、")[0]
    assert (
        "- 未核验 arXiv 号：1 个（共 2 个；" in summary and summary.rstrip().endswith("2609.23130") is False
    )
    assert "：2609.23130" in summary
    rows = {
        line.split(" | ")[0]: line
        for line in md.splitlines()
        if line.startswith("| 1605") or line.startswith("| 2609")
    }
    assert "Heat-bath random walks with Markov bases" in rows["| 1605.08386"]
    assert "未核验" not in rows["| 1605.08386"]
    assert "未核验（标题取自文档）" in rows["| 2609.23130"]

    en = render_markdown(build(), lang="en", zone=SH)
    assert "- Unverified arXiv ids: 2 of 2 (" in en and ": 1605.08386 / 2609.23130" in en
    assert en.count("unverified (title from the documents)") == 2


def test_markdown_says_zero_unverified_when_all_are_verified() -> None:
    api = EnrichedId(record=HEAT_BATH, source="arxiv_api")
    other = EnrichedId(record=ArxivRecord(id="2609.23130", title="Mooncake"), source="cache")
    md = render_markdown(build({"1605.08386": api, "2609.23130": other}), zone=SH)
    assert "- 未核验 arXiv 号：0 个（共 2 个；标题取自文档，未经 arXiv API 或缓存核实）：—" in md
    assert "未核验（标题取自文档）" not in md


def test_table_four_lists_every_id_of_the_window_adjacent_and_reference_notes_included() -> None:
    from tests.processors.notes import brief as brief_notes
    from tests.processors.notes import note as parsed

    on_axis = parsed(
        "inbox/jay/2026-09-27-1000-kv.md",
        "# vLLM 推理\n\n## KV cache\narXiv:2609.23130 vLLM KV cache 推理：吞吐量提升 3.8×。\n",
    )
    # Mainly llm-infra: adjacent to inference, yet its ids are ids of the window.
    adjacent = parsed(
        "inbox/spark/2026-09-27-1100-gpu.md",
        "# GPU 集群\n\nKubernetes GPU cluster 调度与 training 基础设施：arXiv:2609.40001；KVTC arXiv:2511.01815。\n",
    )
    other_briefing = parsed("inbox/flyp/2026-09-27-risk-e1prep.md", "# risk · E1\n\n| 2609.06674 | Detok |\n")
    b = brief_notes([on_axis, adjacent, other_briefing])
    rel = {s.path: s.relevance.code for s in b.sources}
    assert (rel[adjacent.path], rel[other_briefing.path]) == ("adjacent", "reference")
    status = {a.id: a.status for a in b.arxiv}
    assert status == {
        "2609.23130": "new",
        "2609.40001": "new",
        "2511.01815": "continued",
        "2609.06674": "new",
    }
    # The summary's lists are 四's, split by status.
    assert b.summary.new_arxiv == [a.id for a in b.arxiv if a.status == "new"]
    assert b.summary.continued_arxiv == [a.id for a in b.arxiv if a.status == "continued"]
