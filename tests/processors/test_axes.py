import hashlib
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.axes import assign_axes, keyword_hits
from processors.documents import parse_document
from processors.models import AxisSpec, Document, RawFile

AXES = [
    AxisSpec(name="inference", keywords=("KV cache", "推理"), living_doc="living/inference.md"),
    AxisSpec(name="llm-infra", keywords=("kafka", "GPU"), living_doc="living/llm-infra.md"),
    AxisSpec(name="llm-application", keywords=("agent",)),
]


def parse(path: str, text: str) -> Document:
    data = text.encode("utf-8")
    raw = RawFile(
        path=path,
        content=data,
        size=len(data),
        mtime=datetime(2026, 9, 26, tzinfo=UTC).timestamp(),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return parse_document(raw, zone=ZoneInfo("Asia/Shanghai"))


def test_keyword_match_ascii_word_boundary_and_cjk_substring() -> None:
    assert assign_axes(parse("inbox/a/2026-09-26-x.md", "A new kv CACHE trick"), AXES) == ["inference"]
    assert assign_axes(parse("inbox/a/2026-09-26-x.md", "大模型推理加速"), AXES) == ["inference"]
    assert assign_axes(parse("inbox/a/2026-09-26-x.md", "agents and GPUs"), AXES) == []
    assert assign_axes(parse("inbox/a/2026-09-26-x.md", "nothing relevant"), AXES) == []


def test_result_follows_config_order() -> None:
    doc = parse("inbox/a/2026-09-26-x.md", "an agent on a GPU with a KV cache")
    assert assign_axes(doc, AXES) == ["inference", "llm-infra", "llm-application"]


def test_front_matter_axes_intersect_config() -> None:
    doc = parse("inbox/a/2026-09-26-x.md", "---\naxes: [llm-application, unknown]\n---\nplain")
    assert assign_axes(doc, AXES) == ["llm-application"]


def test_living_doc_goes_to_its_own_axis_only() -> None:
    assert assign_axes(parse("living/inference.md", "# inference.md v1\nkafka agent"), AXES) == ["inference"]
    assert assign_axes(parse("living/llm-application.md", "# x"), AXES) == ["llm-application"]
    assert assign_axes(parse("living/other.md", "# KV cache"), AXES) == []


def test_baseline_goes_to_its_axis_and_keyword_matches() -> None:
    doc = parse("inbox/b/2026-09-26-llm-infra-e1prep.md", "# prep\nplain")
    assert assign_axes(doc, AXES) == ["llm-infra"]
    doc = parse("inbox/b/2026-09-26-llm-infra-e1prep.md", "# prep\nsee KV cache")
    assert assign_axes(doc, AXES) == ["inference", "llm-infra"]
    assert assign_axes(parse("inbox/b/2026-09-26-gone-e1prep.md", "plain"), AXES) == []


def test_paper_card_primary_and_anchors() -> None:
    doc = parse(
        "paper_cards/1-2609-19969.md",
        "---\nprimary: llm-application\nanchors:\n  llm-infra: §3.3\n---\n# card\n",
    )
    assert assign_axes(doc, AXES) == ["llm-infra", "llm-application"]


def test_work_queue_goes_everywhere() -> None:
    assert assign_axes(parse("work-queue/2026-09-26.md", "# q"), AXES) == [a.name for a in AXES]


def test_keyword_hits_counts_title_and_text() -> None:
    doc = parse("inbox/a/2026-09-26-x.md", "# KV cache\nkv cache, KV Cache; 推理")
    assert keyword_hits(doc, AXES[0]) == 5
    assert keyword_hits(doc, AXES[1]) == 0


ODD = ["İ", "ı", "ſ", "K", "k", "K", "s", "S", "i", "I", "推", "理", "-", " ", "é", "É", "1"]


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*ODD, "kv", "KV cache", "agent", "AGENTS", "推理", "\n"]), max_size=40
    ).map("".join),
    keyword=st.sampled_from(["kv", "KV cache", "agent", "推理", "ſerving", "Kelvin", "é", "k8s", "is"]),
)
def test_the_fast_keyword_test_finds_what_the_ignorecase_pattern_finds(text: str, keyword: str) -> None:
    axis = AxisSpec(name="x", keywords=(keyword,))
    doc = parse("inbox/a/2026-09-26-x.md", f"{text}\n")
    assert (assign_axes(doc, [axis]) == ["x"]) == (keyword_hits(doc, axis) > 0)
