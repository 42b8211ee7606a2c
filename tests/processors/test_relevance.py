"""Relevance in 一: a code (roles first, then the band of the score against the axis), shown per language."""

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import ProfileScores

from processors.documents import parse_document
from processors.fan_out import keyword_terms
from processors.i18n import RELEVANCE, relevance_label
from processors.models import AxisSpec, RawFile, Relevance
from processors.reasons import RELEVANCE_CODES
from processors.relevance import AxisSpace, doc_counts, relevance
from tests.processors.notes import AXES, SH, note
from tests.processors.reference import profile_scores as reference

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


LOW = note("inbox/jay/2026-09-27-1200-misc.md", "# 周末随笔\n\n天气晴，读了一本小说，没有技术内容。\n")


def _rel(doc, lang="zh"):
    docs = [ON_AXIS, OFF_AXIS, CARD, OTHER_CARD, BASELINE, OTHER_BRIEFING, QUEUE, LOW]
    space = AxisSpace(docs, AXES, {})
    return relevance(doc, "inference", space.scores(doc), lang=lang)


def test_roles_come_before_scores() -> None:
    assert (_rel(BASELINE).code, _rel(BASELINE).label) == ("baseline", "基线")
    assert _rel(OTHER_BRIEFING).code == "reference"
    assert _rel(QUEUE).code == "reference"
    assert _rel(OTHER_CARD).code == "adjacent"  # its primary axis is another one


def test_a_note_on_the_axis_gets_more_stars_than_one_mainly_about_another_axis() -> None:
    on, off = _rel(ON_AXIS), _rel(OFF_AXIS)
    assert on.stars >= 4 and on.code in ("very_high", "high")
    assert off.code == "adjacent"  # llm-infra's profile scores it far higher
    assert on.score > off.score


def test_the_terms_behind_a_score_are_the_axis_profile_terms_the_note_uses() -> None:
    space = AxisSpace([ON_AXIS, OFF_AXIS, LOW], AXES, {})
    on = space.evidence_of(ON_AXIS.terms, "inference")
    assert {"vllm", "推理", "kv", "cache", "ttft"} <= set(on) and on.index("kv") < on.index(
        "ttft"
    )  # twice, once
    assert set(on) <= set(space.keywords["inference"])  # no living document here: keywords only
    assert space.evidence_of(LOW.terms, "inference") == ()  # a score of nothing has no evidence
    assert not set(space.evidence_of(OFF_AXIS.terms, "inference")) & {
        "gpu",
        "kubernetes",
    }  # another axis's words


def test_the_evidence_terms_are_the_most_frequent_first_then_alphabetical_and_at_most_the_limit() -> None:
    space = AxisSpace([ON_AXIS, OFF_AXIS, LOW], AXES, {})
    counts = {"vllm": 2, "kv": 3, "cache": 2, "ttft": 1, "推理": 3, "not-a-profile-term": 9}
    assert space.evidence_of(counts, "inference") == ("kv", "推理", "cache", "vllm", "ttft")
    assert space.evidence_of(counts, "inference", limit=3) == ("kv", "推理", "cache")


def test_a_note_far_from_every_axis_is_low_with_fewer_stars_than_medium() -> None:
    low = _rel(LOW)
    assert (low.code, low.label, low.stars) == ("low", "低", 2)


@pytest.mark.parametrize("doc", [ON_AXIS, BASELINE, OTHER_CARD, LOW])
def test_the_label_is_the_code_s_display_text_in_the_briefing_language(doc) -> None:
    zh, en = _rel(doc), _rel(doc, "en")
    assert zh.code == en.code and (zh.stars, zh.score) == (en.stars, en.score)
    assert (zh.label, en.label) == (relevance_label(zh.code, "zh"), relevance_label(zh.code, "en"))
    assert en.label.isascii()


def test_every_code_has_display_text_in_each_language() -> None:
    assert set(RELEVANCE) == set(RELEVANCE_CODES)
    assert all(set(texts) == {"zh", "en"} for texts in RELEVANCE.values())


def test_a_briefing_written_before_codes_reads_its_label_back_as_the_code() -> None:
    old = Relevance.model_validate({"label": "邻接", "stars": 0, "score": 0.1})
    assert old.code == "adjacent"


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


def test_a_unit_s_keywords_of_several_terms_count_only_whole() -> None:
    axes = (
        AxisSpec(name="multimodal", keywords=("视觉语言", "vision-language", "video")),
        AxisSpec(name="inference", keywords=("KV cache", "serving")),
    )
    space = AxisSpace([], axes, {})
    # real: zh_hf_2404589803/final/2025-01-10_daily_paper.md (HisTR), 2025-01-13 (VideoRAG, in English)
    assert space.unit_score("构建历史土耳其语自然语言处理的基础", "multimodal")[0] == 0.0
    assert space.unit_score("Natural Language Processing of Historical Turkish", "multimodal")[0] == 0.0
    assert space.unit_score("大型视觉语言模型", "multimodal")[0] > 0
    assert space.unit_score("Retrieval-Augmented Generation over Video Corpus", "multimodal")[0] > 0
    # real: LeanK's abstract (tests/corpus/arxiv_metadata): the phrase around a parenthesis still counts
    assert space.unit_score("the growing key-value (KV) cache", "inference")[0] > 0
    assert space.unit_score("a semantic prompt cache", "inference")[0] == 0.0


def test_one_mention_is_the_passing_level_and_two_are_more() -> None:
    space = AxisSpace([], (AxisSpec(name="multimodal", keywords=("video", "视频")),), {})
    once, n = space.unit_score("我们提出一个视频基准，用于评估语言模型的规划能力。", "multimodal")
    twice, _ = space.unit_score("我们提出一个视频基准，用于评估视频语言模型的规划能力。", "multimodal")
    assert once == space.mention_level(n, "multimodal") < twice


LIVING = note(
    "living/inference.md",
    "# 推理\n\n## §3.3 KV cache 压缩\n\nvLLM、SGLang 的 KV cache 量化与 prefix caching；speculative decoding。\n",
)
_SPACE = AxisSpace([ON_AXIS, OFF_AXIS, CARD, LOW], AXES, {"inference": LIVING})
_TERMS = [*sorted(_SPACE.profile_terms), "天气", "小说", "x"]  # profile terms and a few of no profile


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_TERMS), st.integers(0, 40), max_size=25),
    st.integers(0, 5000),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(_TERMS), st.integers(0, 5), max_size=6)),
)
def test_the_compiled_scores_and_evidence_are_python_s(counts, length, whole) -> None:
    # Same rounding, same order of the evidence (count, then term); the sums' order may differ in the last bit.
    assert _SPACE.living_terms["inference"]
    assert _SPACE._profile_scores(counts, length, whole) == reference.profile_scores(
        _SPACE, counts, length, whole
    )
    for axis in [*_SPACE.keywords, "unknown"]:
        assert _SPACE.evidence_of(counts, axis, 5) == reference.evidence(_SPACE, counts, axis, 5)


def test_keys_of_the_counts_that_are_no_str_are_skipped_as_python_skipped_them() -> None:
    # Python's lookup of the profile missed such a key, its value never read: no TypeError, the same scores.
    counts = dict.fromkeys(sorted(_SPACE.profile_terms)[:6], 2)
    mixed: dict[Any, Any] = {5: 1, **counts, None: "x", ("a",): 2, b"vllm": 1, 2.5: None}
    whole: dict[Any, Any] = {7: 3, **dict.fromkeys(counts, 1)}
    scores = _SPACE._profile_scores(mixed, 100)
    assert scores == _SPACE._profile_scores(counts, 100) == reference.profile_scores(_SPACE, mixed, 100)
    assert any(scores.values())
    only_str = dict.fromkeys(counts, 1)
    assert _SPACE._profile_scores(mixed, 100, whole) == _SPACE._profile_scores(counts, 100, only_str)
    for axis in _SPACE.keywords:
        assert _SPACE.evidence_of(mixed, axis, 5) == _SPACE.evidence_of(counts, axis, 5)
        assert _SPACE.evidence_of(mixed, axis, 5) == reference.evidence(_SPACE, mixed, axis, 5)


def _one_term(weight: float, share: float = 1.0, terms: int = 1) -> tuple[ProfileScores, dict[str, int]]:
    """A profile of living terms of `weight` each, K1 = 0 (a used term saturates to exactly 1.0): the score is
    `share` × the sum of the weights, a value the test picks."""
    index = [(f"t{i}", [(0, weight)]) for i in range(terms)]
    return ProfileScores(["a"], index, [share], 1.0, (0.0, 0.75, 0.5)), {f"t{i}": 1 for i in range(terms)}


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=False),
        st.floats(0.0, 1.0),
        st.integers(0, 63).map(lambda j: j / 32),  # the only exact ties at 4 places: 1/32, 3/32, …
        st.integers(0, 10_000).map(lambda k: (k + 0.5) / 10_000),  # near them: 0.00005, 0.00015, …
        st.sampled_from([0.00005, 2.675, 1.0005, -0.00001, -0.0, math.inf, -math.inf, 5e-324, 1e308]),
    )
)
def test_the_compiled_rounding_is_python_s_round(x: float) -> None:
    scores, counts = _one_term(x)
    got, want = scores.scores(counts, 1)["a"], round(0.0 + x, 4)
    assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), (x, got, want)
    scores, counts = _one_term(math.nan)
    assert math.isnan(scores.scores(counts, 1)["a"])


def test_the_compiled_scores_do_not_follow_the_counts_order() -> None:
    # A stored source's counts come in json_group_object's order (no ORDER BY: DuckDB's threads may change it), a
    # parsed one's in its text's: the sums run in one order of their own, the profile's. Here (0.1 + 0.2) + 0.3
    # is 0.6000000000000001 and (0.3 + 0.2) + 0.1 is 0.6, on either side of 0.00015 once scaled.
    index = [("x", [(0, 0.1)]), ("y", [(0, 0.2)]), ("z", [(0, 0.3)])]
    share = 0.00015 / 0.6
    while round(share * 0.6000000000000001, 4) == round(share * 0.6, 4):
        share = math.nextafter(share, 1.0)
    assert share < 0.00015 / 0.6 * (1 + 1e-12)
    scores = ProfileScores(["a"], index, [share], 1.0, (0.0, 0.75, 0.5))
    assert scores.scores({"x": 1, "y": 1, "z": 1}, 1) == scores.scores({"z": 1, "y": 1, "x": 1}, 1)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_TERMS), st.integers(0, 40), max_size=25),
    st.integers(0, 5000),
    st.randoms(),
)
def test_the_compiled_scores_are_those_of_the_counts_in_any_order(counts, length, rnd) -> None:
    items = list(counts.items())
    rnd.shuffle(items)
    assert _SPACE._profile_scores(dict(items), length) == _SPACE._profile_scores(counts, length)
