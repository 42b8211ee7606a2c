"""A note whose stored text does not read back (damaged) is listed once, among the rejected: a duplicate of it
takes its place, and nothing else of the briefing quotes it or counts what only it says."""

from collections.abc import Collection, Iterator, Sequence

import pytest

from processors.briefing import MIN_RESERVE
from processors.briefing_rules import BriefingRules, IncrementRules
from processors.browse import BriefingPage, briefing_page, changes, history
from processors.damaged_notes import regroup
from processors.models import Briefing, Document, Rejection, Trigger
from processors.near_duplicates import DuplicateOf
from processors.render_markdown import render_markdown
from processors.window_rows import SourceRow
from processors.window_set import MemoryWindow
from tests.processors.notes import SH, brief, note
from tests.processors.test_discrepancies import BASELINE, TYPO

KV = "# vLLM 推理\n\n## KV cache\narXiv:2609.23130 vLLM KV cache 推理：吞吐量提升 3.8×，Cache hit 92.2%。\n"
FIRST = note("inbox/jay/2026-09-27-1000-a.md", KV)
SECOND = note("inbox/tom/2026-09-27-1100-b.md", KV)
THIRD = note("inbox/spark/2026-09-27-1200-c.md", KV)
# Nearly the same text as KV (one more clause): a near duplicate of it.
NEAR = note(
    "inbox/flyp/2026-09-27-1300-d.md",
    KV.replace("92.2%。", "92.2%，延迟下降。"),
)
OTHER = note(
    "inbox/stephen/2026-09-27-1400-e.md",
    "# 推理 speculative decoding\n\n## 投机解码\narXiv:2609.23131 vLLM 投机解码推理 TTFT 降低 30%。\n",
)


def _brief(
    docs: Sequence[Document],
    damaged: Sequence[str] = (),
    trigger: Trigger = "close",
    increment_range: tuple[int, int] = (3, 8),
) -> Briefing:
    """The briefing of `docs` stored as summaries, the `damaged` ones not reading back (the request lists them)."""
    whole = {d.path: d for d in docs}
    rejected = [
        Rejection(path=p, reason="its stored text cannot be read (x)", reason_code="damaged") for p in damaged
    ]
    return brief(
        [d.summary() for d in docs],
        load=lambda ps: [whole[p] for p in ps if p not in damaged],
        rejected=rejected,
        trigger=trigger,
        increment_range=increment_range,
    )


def _said_the_same(b: Briefing, alone: Briefing) -> None:
    """`b` says what `alone` says of its sources, increments, ids and D-items."""
    assert b.sources == alone.sources and b.no_increment_sources == alone.no_increment_sources
    assert (b.increments, b.arxiv, b.summary) == (alone.increments, alone.arxiv, alone.summary)
    assert b.discrepancies == alone.discrepancies


@pytest.mark.parametrize("trigger", ["close", "flush"])
def test_a_damaged_original_s_readable_copy_is_briefed_as_if_it_were_alone(trigger: Trigger) -> None:
    b = _brief([FIRST, SECOND], damaged=[FIRST.path], trigger=trigger)
    _said_the_same(b, _brief([SECOND], trigger=trigger))
    assert [(s.path, s.status) for s in b.sources] == [(SECOND.path, "used")] and len(b.increments) == 1
    assert [r.path for r in b.rejected] == [FIRST.path]
    markdown = render_markdown(b, lang="en", zone=SH)
    assert "sources 1 (0 duplicate, 1 rejected)" in markdown and markdown.count(FIRST.path) == 1


def test_in_a_group_of_three_the_earliest_readable_is_kept_and_the_rest_are_its_duplicates() -> None:
    b = _brief([FIRST, SECOND, THIRD], damaged=[FIRST.path])
    listed = {s.path: (s.status, s.duplicate_of) for s in b.sources}
    assert listed == {SECOND.path: ("used", None), THIRD.path: ("duplicate", SECOND.path)}
    _said_the_same(b, _brief([SECOND, THIRD]))


def test_a_copy_that_does_not_read_back_either_gives_the_place_to_the_next() -> None:
    b = _brief([FIRST, SECOND, THIRD], damaged=[FIRST.path, SECOND.path])
    assert [r.path for r in b.rejected] == [FIRST.path, SECOND.path]
    _said_the_same(b, _brief([THIRD]))


def test_a_near_duplicate_of_a_damaged_original_points_at_the_copy_kept() -> None:
    readable = _brief([FIRST, SECOND, NEAR])
    b = _brief([FIRST, SECOND, NEAR], damaged=[FIRST.path])
    [was] = [s for s in readable.sources if s.path == NEAR.path]
    [now] = [s for s in b.sources if s.path == NEAR.path]
    assert (was.duplicate_of, was.duplicate_kind) == (FIRST.path, "near")
    # The copy kept has the damaged original's text: the similarity measured against it is the copy's.
    assert (now.status, now.duplicate_of, now.similarity) == ("duplicate", SECOND.path, was.similarity)


def test_a_near_copy_takes_the_place_and_an_exact_copy_of_the_original_becomes_its_near_duplicate() -> None:
    out, heirs = regroup(
        {
            NEAR.path: DuplicateOf(FIRST.path, "near", 0.9, FIRST.path),
            THIRD.path: DuplicateOf(FIRST.path, "exact", 1.0, FIRST.path),
        },
        {FIRST.path},
        {NEAR.path: 2, THIRD.path: 3},
    )
    assert heirs == {FIRST.path: NEAR.path}
    assert out == {THIRD.path: DuplicateOf(NEAR.path, "near", 0.9, NEAR.path)}


def test_an_id_only_a_damaged_note_cites_is_not_listed_and_one_another_cites_stays() -> None:
    b = _brief([FIRST, OTHER], damaged=[OTHER.path])
    assert [e.id for e in b.arxiv] == ["2609.23130"] and b.summary.new_arxiv == ["2609.23130"]
    shared = _brief([FIRST, note(OTHER.path, OTHER.text + "\narXiv:2609.23130\n")], damaged=[OTHER.path])
    assert [e.id for e in shared.arxiv] == ["2609.23130"]


@pytest.mark.parametrize("trigger", ["close", "flush"])
def test_a_damaged_note_dating_an_id_after_itself_makes_no_d_item(trigger: Trigger) -> None:
    later = note(
        "inbox/jay/2026-09-27-1200-f.md",
        "# vLLM 推理 KV cache\n\n## 论文\narXiv:2612.00001 vLLM TTFT -30%。\n",
    )
    assert [d.kind for d in _brief([later, FIRST], trigger=trigger).discrepancies] == ["future_arxiv_id"]
    b = _brief([later, FIRST], damaged=[later.path], trigger=trigger)
    assert b.discrepancies == [] and [e.id for e in b.arxiv] == ["2609.23130"]
    assert "2612.00001" not in b.summary.new_arxiv and len(b.increments) == 1


def test_a_damaged_note_stating_an_anchored_title_under_another_id_makes_no_title_conflict() -> None:
    assert any(d.kind == "arxiv_id_conflict" for d in _brief([BASELINE, TYPO, FIRST]).discrepancies)
    b = _brief([BASELINE, TYPO, FIRST], damaged=[TYPO.path])
    assert not [c for d in b.discrepancies for c in d.claims if c.source.split("#")[0] == TYPO.path]
    assert b.discrepancies == [] and "2504.11302" not in {e.id for e in b.arxiv}


# The axis's own earlier briefing, citing the id FIRST cites: that id is continued while it reads back.
OWN_BASELINE = note(
    "inbox/tom/2026-09-27-0100-inference-e1prep.md",
    "# inference · E1 预消化简报(2026-09-26)\n\n## 四\n| arXiv 号 | 标题 |\n|---|---|\n| 2609.23130 | vLLM KV |\n",
)


def test_a_damaged_baseline_anchors_no_id() -> None:
    assert _brief([OWN_BASELINE, FIRST]).summary.continued_arxiv == ["2609.23130"]
    b = _brief([OWN_BASELINE, FIRST], damaged=[OWN_BASELINE.path])
    assert (b.summary.new_arxiv, b.summary.continued_arxiv) == (["2609.23130"], [])
    assert [(e.id, e.status) for e in b.arxiv] == [("2609.23130", "new")]
    assert [i.novelty for i in b.increments] == ["new"]


def test_a_damaged_baseline_s_readable_copy_anchors_as_it_would_alone() -> None:
    copy = note("inbox/jay/2026-09-27-0200-inference-e1prep.md", OWN_BASELINE.text)
    b = _brief([OWN_BASELINE, copy, FIRST], damaged=[OWN_BASELINE.path])
    _said_the_same(b, _brief([copy, FIRST]))
    assert b.summary.continued_arxiv == ["2609.23130"]


def test_a_readable_copy_whose_ids_the_axis_cites_is_covered_as_it_would_be_alone() -> None:
    # Only the living document's id (§3.3): with one increment to make, the copy yields none, being covered.
    text = "# KV cache 压缩\n\n## KVTC\nKVTC arXiv:2511.01815 KV cache 压缩 推理。\n"
    original, copy = (
        note("inbox/jay/2026-09-27-0900-x.md", text),
        note("inbox/tom/2026-09-27-0930-y.md", text),
    )
    alone = _brief([copy, FIRST, OTHER], increment_range=(1, 1))
    assert {n.path: n.code for n in alone.no_increment_sources}[copy.path] == "covered"
    b = _brief([original, copy, FIRST, OTHER], damaged=[original.path], increment_range=(1, 1))
    _said_the_same(b, alone)


def test_a_source_gone_because_it_is_now_damaged_says_so_in_the_browser() -> None:
    # The browser's "sources gone" against the previous briefing: not as if deleted, but rejected, and why.
    before, now = _brief([FIRST, OTHER], trigger="flush"), _brief([FIRST, OTHER], damaged=[OTHER.path])
    c = changes(now, before, "before")
    assert (c.sources_gone, c.rejected) == ([OTHER.path], {OTHER.path: "damaged"})
    page = briefing_page(BriefingPage(now, c, history([], [])), SH, "en")
    [gone] = [line for line in page.splitlines() if "sources gone" in line]
    assert OTHER.path in gone and "rejected by this briefing: its stored text is damaged" in gone


# Notes more relevant than GOOD, each distinct: every slot one of them frees is taken by the next.
RUN = [
    note(
        f"inbox/jay/2026-09-27-{10 + i:02d}00-run{i}.md",
        f"# vLLM 推理 {t}\n\n## {t}\nvLLM 推理 serving {t} 吞吐量提升 {i + 2}.5×，arXiv:2609.2314{i}。vLLM 推理 {t}。\n",
    )
    for i, t in enumerate(["KV cache 压缩", "投机解码", "量化 INT4", "批处理调度", "前缀缓存", "张量并行"])
]
GOOD = note("inbox/tom/2026-09-27-2100-g.md", "# 推理\n\n## 笔记\nvLLM 推理 延迟下降 10%。\n")


def _scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per read of the window's rows (a scan of every source: ~+45 % of a 100k briefing each)."""
    scans: list[int] = []
    rows = MemoryWindow.rows

    def counted(self: MemoryWindow, profile: Collection[str]) -> Iterator[SourceRow]:
        scans.append(len(self.docs))
        return rows(self, profile)

    monkeypatch.setattr(MemoryWindow, "rows", counted)
    return scans


def _brief_with(docs: Sequence[Document], lost: Collection[str], slots: int) -> Briefing:
    """The briefing of `docs` keeping `slots` contributors, the `lost` ones not reading back."""
    whole = {d.path: d for d in docs}
    return brief(
        [d.summary() for d in docs],
        load=lambda paths: [whole[p] for p in paths if p not in lost],
        rejected=[
            Rejection(path=p, reason="its stored text cannot be read (x)", reason_code="damaged")
            for p in lost
        ],
        rules=BriefingRules(increments=IncrementRules(max_contributors=slots)),
    )


def test_a_run_of_damaged_notes_each_taking_the_freed_slot_reads_the_window_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One contributor's slot, and six damaged notes each more relevant than the readable one: the freed slot goes
    # down the reserve ranked in the one scan, not to a second scan of the window (twice before: 7 on 579c7a5).
    scans = _scans(monkeypatch)
    lost = {d.path for d in RUN}
    b = _brief_with([*RUN, GOOD], lost, slots=1)
    assert len(scans) == 1
    # Every note still once: the damaged ones rejected only, the readable one a source, used.
    assert sorted(r.path for r in b.rejected) == sorted(lost)
    assert [(s.path, s.status) for s in b.sources] == [(GOOD.path, "used")] and len(b.increments) == 1


def test_more_damaged_contributors_than_the_reserve_holds_read_the_window_once_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A reserve of MIN_RESERVE beside the one slot, every note of it damaged: the window is read again, once, and
    # the slot still goes to the readable note.
    scans = _scans(monkeypatch)
    topics = ["KV cache 压缩", "投机解码", "量化 INT4", "批处理调度", "前缀缓存", "张量并行", "流水线并行"]
    topics += ["算子融合", "显存卸载", "长上下文", "多租户隔离", "冷启动"]
    assert len(topics) > 1 + MIN_RESERVE
    many = [
        note(
            f"inbox/jay/2026-09-27-{10 + i:02d}30-many{i}.md",
            f"# vLLM 推理 {t}\n\n## {t}\nvLLM 推理 serving {t} 吞吐量提升 {i + 2}.5×，arXiv:2609.2315{i}。\n",
        )
        for i, t in enumerate(topics)
    ]
    lost = {d.path for d in many}
    b = _brief_with([*many, GOOD], lost, slots=1)
    assert len(scans) == 2
    assert sorted(r.path for r in b.rejected) == sorted(lost)
    assert [(s.path, s.status) for s in b.sources] == [(GOOD.path, "used")] and len(b.increments) == 1


def test_a_damaged_contributor_s_slot_goes_to_the_next_ranked_source_every_relevance_unmoved() -> None:
    # Two slots, the second most relevant note damaged: the third takes its slot; the damaged note's stored terms
    # (read at ingest) stay weighed, so every other source is listed as when all three slots read back.
    docs, damaged = [*RUN, GOOD], RUN[1].path
    readable = _brief_with(docs, (), slots=3)
    b = _brief_with(docs, {damaged}, slots=2)
    assert [s for s in readable.sources if s.path != damaged] == b.sources
    used = [s.path for s in b.sources if s.status == "used"]
    assert used == [RUN[0].path, RUN[2].path] and len(b.increments) == 2


def _tied(path: str, n: int) -> Document:
    """A note as relevant as every other `_tied` one (only its numbers differ): the ranking orders them by path."""
    return note(path, f"# 推理 {n}\n\n## serving {n}\nvLLM serving 推理 题目{n} 延迟 {n}ms。\n")


def test_a_damaged_contributor_s_copy_ranked_below_the_reserve_does_not_pass_a_source_ranked_above_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One slot, its note and the whole reserve damaged; the note's exact copy ranks (by path, the rest tied) below
    # a readable source the reserve had no room for: that source gets the slot, as a read past the damage ranks.
    scans = _scans(monkeypatch)
    first = _tied("inbox/a/2026-09-27-1000-a.md", 50)
    reserve = [_tied(f"inbox/r{i}/2026-09-27-11{i:02d}-r.md", i) for i in range(MIN_RESERVE)]
    passed = _tied("inbox/s/2026-09-27-1130-s.md", 60)
    copy = note("inbox/z/2026-09-27-1200-z.md", first.text)
    lost = {first.path, *(d.path for d in reserve)}
    b = _brief_with([first, *reserve, passed, copy], lost, slots=1)
    assert [(s.path, s.status) for s in b.sources] == [(passed.path, "used"), (copy.path, "no_increment")]
    assert sorted(r.path for r in b.rejected) == sorted(lost) and len(scans) == 2
