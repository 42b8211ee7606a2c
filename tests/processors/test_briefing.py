"""The assembled briefing: what the window holds, statuses, reasons, priorities, summary."""

import hashlib
from datetime import datetime, timedelta

import pytest

from processors.briefing_request import cited_ids_of, max_d_number
from processors.fan_out import route_read
from processors.models import AxisSpec, Briefing, RawFile, Rejection
from processors.render_markdown import render_markdown
from tests.processors.notes import AXES, END, SH, WINDOW, brief, example_documents, note

KV = "# vLLM 推理\n\n## KV cache\narXiv:2609.23130 vLLM KV cache 推理：吞吐量提升 3.8×，Cache hit 92.2%。\n"


def test_documents_outside_the_window_are_left_out_and_its_edges_are_half_open() -> None:
    at_start = note("inbox/tom/2026-09-26-2220-start.md", KV)
    at_end = note("inbox/tom/2026-09-27-2220-end.md", KV.replace("3.8×", "3.9×"))
    old = note("inbox/tom/2026-09-20-0900-old.md", KV.replace("3.8×", "4.0×"))
    paths = [s.path for s in brief([at_start, at_end, old]).sources]
    assert paths == ["inbox/tom/2026-09-26-2220-start.md"]


def test_an_exact_duplicate_is_listed_with_the_earliest_as_its_original() -> None:
    first = note("inbox/jay/2026-09-27-1000-a.md", KV)
    again = note("inbox/tom/2026-09-27-1100-b.md", KV)
    b = brief([again, first])
    dup = next(s for s in b.sources if s.path == again.path)
    assert (dup.status, dup.duplicate_of) == ("duplicate", first.path)
    assert {n.path: n.code for n in b.no_increment_sources}[again.path] == "duplicate"


def test_yesterday_s_briefing_is_the_baseline_even_when_dated_before_the_window() -> None:
    baseline = note(
        "inbox/tom/2026-09-26-inference-e1prep.md",
        "# inference · E1\n\n| 2605.01604 | 七大失败模式 |\nD194：x\n",
    )
    b = brief([baseline, note("inbox/jay/2026-09-27-1000-a.md", KV)])
    src = next(s for s in b.sources if s.path == baseline.path)
    assert src.relevance.label == "基线"
    assert "2605.01604" in b.summary.continued_arxiv
    assert b.discrepancies == [] or b.discrepancies[0].id == "D195"


def test_every_source_without_an_increment_says_why() -> None:
    b = brief(example_documents())
    codes = {n.path.rsplit("/", 1)[-1]: n.code for n in b.no_increment_sources}
    assert codes["2026-09-26-inference-e1prep.md"] == "baseline"
    assert codes["2026-09-27-1840-llm-infra-e1prep.md"] == "reference"
    assert codes["2026-09-27-2200.md"] == "work_queue"
    assert codes["1432-2609-19499.md"] == "adjacent"
    assert codes["1487-2609-26550.md"] == "covered"
    assert {s.path for s in b.sources if s.status in ("used", "duplicate", "superseded")}.isdisjoint(
        n.path for n in b.no_increment_sources if n.code != "duplicate"
    )


def test_priorities_put_new_papers_first_and_d_items_last() -> None:
    b = brief(example_documents())
    levels = [p.level for p in b.priorities]
    assert levels == sorted(levels, key=["highest", "medium", "low"].index)
    assert levels[0] == "highest" and b.priorities[-1].content.startswith(f"{b.discrepancies[0].id}-")
    assert b.priorities[0].action.startswith("写入 §")


def test_an_empty_window_still_gives_a_complete_briefing() -> None:
    b = brief([])
    assert (b.sources, b.increments, b.arxiv, b.discrepancies) == ([], [], [], [])
    assert b.summary.increment_count == 0 and b.living_doc.version == "v3.44"
    assert Briefing.model_validate_json(b.model_dump_json(by_alias=True)) == b


def test_the_json_round_trips_and_carries_the_schema_name() -> None:
    b = brief(example_documents())
    data = b.model_dump(mode="json", by_alias=True)
    assert data["schema"] == "predigest.briefing/v1"
    assert datetime.fromisoformat(data["window"]["end"]) == WINDOW.end.astimezone(SH)
    assert Briefing.model_validate(data) == b


def test_cited_ids_and_d_numbers_carry_over_to_the_next_window() -> None:
    b = brief(example_documents())
    assert set(b.summary.new_arxiv) <= cited_ids_of(b)
    assert max_d_number(d.id for d in b.discrepancies) == 194 + len(b.discrepancies)


def test_summaries_and_a_loader_give_the_same_briefing_and_load_only_what_can_feed_it() -> None:
    from collections.abc import Sequence

    from processors.briefing_rules import BriefingRules, IncrementRules
    from processors.models import Document

    docs = example_documents()
    whole = {d.path: d for d in docs}
    asked: list[str] = []

    def load(paths: Sequence[str]) -> list[Document]:
        asked.extend(paths)
        return [whole[p] for p in paths]

    rules = BriefingRules(increments=IncrementRules(max_contributors=4))
    summaries = [d.summary() if d.kind != "living" else d for d in docs]
    from_summaries = brief(summaries, rules=rules, load=load, last_d=194)
    assert from_summaries == brief(docs, rules=rules, last_d=194)
    kinds = {whole[p].kind for p in asked}
    assert len([p for p in asked if whole[p].kind in ("inbox", "paper_card")]) <= 4 + 1  # + a future-id note
    assert "baseline" in kinds and "work_queue" in kinds


def test_the_notes_quoted_are_read_whole_in_one_read() -> None:
    """A stored window's every read of bodies passes over all of them: the contributors, the baselines, the
    queues and the notes dating an id after themselves come in one."""
    from collections.abc import Sequence

    from processors.models import Document

    docs = example_documents()
    whole = {d.path: d for d in docs}
    reads: list[list[str]] = []

    def load(paths: Sequence[str]) -> list[Document]:
        reads.append(list(paths))
        return [whole[p] for p in paths]

    summaries = [d.summary() if d.kind != "living" else d for d in docs]
    b = brief(summaries, load=load, last_d=194)
    assert any(d.kind == "future_arxiv_id" for d in b.discrepancies)  # its note quoted from the one read
    assert len(reads) == 1


def test_a_note_whose_stored_text_does_not_read_back_is_listed_once_as_damaged() -> None:
    # A stored window's loader leaves out a note whose text does not read back, and the request's rejected list it
    # (code damaged): it is not a source too, nor given a no-increment reason it never had.
    from collections.abc import Sequence

    from processors.models import Document, Rejection

    docs = example_documents()
    whole = {d.path: d for d in docs}
    summaries = [d.summary() if d.kind != "living" else d for d in docs]
    [used, *_] = [
        s.path for s in brief(summaries, load=lambda ps: [whole[p] for p in ps]).sources if s.status == "used"
    ]
    queue = next(d.path for d in docs if d.kind == "work_queue")

    def load(paths: Sequence[str]) -> list[Document]:
        return [whole[p] for p in paths if p not in (used, queue)]

    damaged = [
        Rejection(path=p, reason="its stored text cannot be read", reason_code="damaged")
        for p in (used, queue)
    ]
    b = brief(summaries, load=load, rejected=damaged)
    assert b.rejected == damaged
    assert not {used, queue} & ({s.path for s in b.sources} | {n.path for n in b.no_increment_sources})
    assert len(b.sources) == len(brief(docs).sources) - 2
    markdown = render_markdown(b, lang="en", zone=SH)
    five = _sections(markdown)["5. Audit list of sources"]
    assert five.count(used) == five.count(queue) == 1 and f"sources {len(b.sources)} (" in markdown


def _damaged(*paths: str) -> list[Rejection]:
    return [
        Rejection(path=p, reason="its stored text cannot be read (x)", reason_code="damaged") for p in paths
    ]


def test_the_readable_copy_of_a_damaged_original_is_not_listed_as_its_duplicate() -> None:
    # The original of an exact duplicate does not read back: its readable copy is listed as a duplicate of a note
    # the briefing lists only among its rejected, and what both say yields no increment.
    first = note("inbox/jay/2026-09-27-1000-a.md", KV)
    again = note("inbox/tom/2026-09-27-1100-b.md", KV)
    whole = {d.path: d for d in (first, again)}
    summaries = [d.summary() for d in (first, again)]
    readable = brief(summaries, load=lambda ps: [whole[p] for p in ps])
    b = brief(
        summaries, load=lambda ps: [whole[p] for p in ps if p != first.path], rejected=_damaged(first.path)
    )
    assert first.path not in {s.duplicate_of for s in b.sources}
    assert len(b.increments) == len(readable.increments) == 1


def test_no_d_item_quotes_a_note_listed_only_as_damaged() -> None:
    # A note dated before an id it cites does not read back: its D-item quotes it (the id alone, its line
    # unread), and 七 ranks that D-item, though 五 lists the note only as damaged.
    later = note(
        "inbox/jay/2026-09-27-1200-f.md",
        "# vLLM 推理 KV cache\n\n## 论文\narXiv:2612.00001 vLLM TTFT -30%。\n",
    )
    docs = [later, note("inbox/tom/2026-09-27-1300-g.md", KV)]
    whole = {d.path: d for d in docs}
    b = brief(
        [d.summary() for d in docs],
        load=lambda ps: [whole[p] for p in ps if p != later.path],
        rejected=_damaged(later.path),
    )
    assert [r.path for r in b.rejected] == [later.path] and later.path not in {s.path for s in b.sources}
    assert not [c.source for d in b.discrepancies for c in d.claims if c.source.split("#")[0] == later.path]


def _sections(markdown: str) -> dict[str, str]:
    """Heading → text of each `## ` section of a rendered briefing."""
    parts = markdown.split("\n## ")[1:]
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1] for p in parts}


# A risk note that says "side-channel" where the risk keyword is "attack": no configured keyword of any axis.
SIDE_CHANNEL = (
    "inbox/flyp/2026-09-27-1000-detok-timing.md",
    "# Detokenization timing\n\nShared backends leak other users' output through a side-channel in "
    "detokenization time; 52 million monthly downloads are affected.\n",
)
# A paper card whose primary axis is not configured.
ELSEWHERE_CARD = (
    "paper_cards/1500-2609-11111.md",
    "---\nprimary: multimodal\n---\n# Vision Token Pruning\n\nPruning 60% of vision tokens keeps accuracy.\n",
)


@pytest.mark.parametrize(("path", "text"), [SIDE_CHANNEL, ELSEWHERE_CARD])
@pytest.mark.parametrize("axis", AXES, ids=lambda a: a.name)
def test_a_note_no_keyword_routes_is_accounted_for_in_every_axis_s_briefing(
    path: str, text: str, axis: AxisSpec
) -> None:
    data = text.encode()
    mtime = (END - timedelta(hours=1)).timestamp()  # the card has no stamp: its time is its mtime
    raw = RawFile(
        path=path, content=data, size=len(data), mtime=mtime, sha256=hashlib.sha256(data).hexdigest()
    )
    events = route_read(raw, AXES, zone=SH, max_bytes=1 << 20, seen_at=END)[0]
    mine = [e.document for e in events if e.axis == axis.name and e.document is not None]
    b = brief([*mine, note("inbox/jay/2026-09-27-1100-kv.md", KV)], axis=axis)
    src = next(s for s in b.sources if s.path == path)
    reasons = {n.path: n for n in b.no_increment_sources}
    assert src.status == "used" or (src.status == "no_increment" and path in reasons)
    md = _sections(render_markdown(b, lang="zh", zone=SH))
    one, five, six = (next(t for h, t in md.items() if h.startswith(p)) for p in ("一、", "五、", "六、"))
    assert path.rsplit("/", 1)[-1] in one and path in five
    assert src.status == "used" or path in six


def test_the_living_document_s_vocabulary_weighs_a_note_no_keyword_names() -> None:
    # Keywords are hints: risk's living document speaks of side-channels, so the note is on risk's axis.
    risk = next(a for a in AXES if a.name == "risk")
    living_risk = note(
        "living/risk.md",
        "# risk.md v1.2\n\n## §2 侧信道\n\nDetokenization timing side-channel leaks shared backends' output; "
        "KV cache timing side-channel.\n",
    )
    side = note(SIDE_CHANNEL[0], SIDE_CHANNEL[1])
    b = brief([side, note("inbox/jay/2026-09-27-1100-kv.md", KV)], axis=risk, living_doc=living_risk)
    assert next(s for s in b.sources if s.path == side.path).relevance.code in ("very_high", "high", "medium")


@pytest.mark.parametrize("axis", AXES, ids=lambda a: a.name)
def test_every_source_of_every_axis_window_is_used_or_says_why_not(axis: AxisSpec) -> None:
    b = brief(example_documents(axis), axis=axis)
    listed = {s.path for s in b.sources if s.status != "superseded"}
    used = {s.path for s in b.sources if s.status == "used"}
    why = [n.path for n in b.no_increment_sources]
    assert len(why) == len(set(why)) and used.isdisjoint(why)
    assert used | set(why) == listed
    # Every id those sources cite is in 四.
    cited = {i for d in example_documents(axis) if d.path in listed for i in d.arxiv_ids}
    assert cited == {a.id for a in b.arxiv}
