"""Relevance labels a reader sees in 一: roles first, then stars from the TF-IDF score against the axis."""

from processors.documents import parse_document
from processors.models import RawFile
from processors.relevance import AxisSpace, doc_counts, relevance
from processors.routing import keyword_terms
from tests.processors.notes import AXES, SH, note

ON_AXIS = note(
    "inbox/jay/2026-09-27-1000-kv.md",
    "# vLLM 推理 KV cache 笔记\n\nvLLM serving 的 KV cache 压缩与 TTFT；SGLang 推理引擎对比。\n",
)
OFF_AXIS = note(
    "inbox/jay/2026-09-27-1100-gpu.md",
    "# GPU 集群\n\nKubernetes GPU cluster 调度与 training 基础设施，集群网络。\n",
)
CARD = note(
    "paper_cards/1417-2609-19969.md",
    '---\nprimary: llm-infra\nanchors: {inference: "§3.3"}\n---\n# DeepSeek-V4.1-Flash\nMLA 压缩。\n',
)
OTHER_CARD = note(
    "paper_cards/1432-2609-19499.md", "---\nprimary: llm-application\n---\n# Sample Count\nagent.\n"
)
BASELINE = note("inbox/tom/2026-09-26-inference-e1prep.md", "# inference · E1\n")
OTHER_BRIEFING = note("inbox/spark/2026-09-27-llm-infra-e1prep.md", "# llm-infra · E1\n")
QUEUE = note("work-queue/2026-09-27-2200.md", "# queue\n1. risk: 安全\n")


def _rel(doc):
    docs = [ON_AXIS, OFF_AXIS, CARD, OTHER_CARD, BASELINE, OTHER_BRIEFING, QUEUE]
    space = AxisSpace(docs, AXES, {})
    return relevance(doc, "inference", space.scores(doc))


def test_roles_come_before_scores() -> None:
    assert _rel(BASELINE).label == "基线"
    assert _rel(OTHER_BRIEFING).label == "参考"
    assert _rel(QUEUE).label == "参考"
    assert _rel(OTHER_CARD).label == "邻接"  # its primary axis is another one


def test_a_note_on_the_axis_gets_more_stars_than_one_mainly_about_another_axis() -> None:
    on, off = _rel(ON_AXIS), _rel(OFF_AXIS)
    assert on.stars >= 4 and on.label in ("极高", "高")
    assert off.label == "邻接"  # llm-infra's profile scores it far higher
    assert on.score > off.score


def test_a_card_anchored_into_the_axis_is_never_marginal_even_with_another_primary() -> None:
    assert _rel(CARD).stars >= 4


def test_a_record_parsed_before_terms_were_kept_is_scored_on_the_terms_the_parser_keeps() -> None:
    keep = keyword_terms(tuple(AXES))
    text = "# vLLM KV cache 推理\n\nPrefix caching https://github.com/vllm-project/vllm serving, KV cache 命中率 92%。\n"
    raw = note("inbox/jay/2026-09-27-1000-kv.md", text)
    parsed = parse_document(
        RawFile(path=raw.path, content=text.encode(), size=raw.bytes, mtime=0.0, sha256=raw.sha256),
        zone=SH,
        keep_terms=keep,
    )
    legacy = parsed.model_copy(update={"terms": {}})
    assert doc_counts(legacy, keep) == parsed.terms
    assert AxisSpace([legacy], AXES, {}).scores(legacy) == AxisSpace([parsed], AXES, {}).scores(parsed)
