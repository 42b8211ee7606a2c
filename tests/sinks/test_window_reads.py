"""A stored window read as rows (sinks.window_reads) is the window its summaries make (processors.window_set):
the same duplicates, term statistics, rows and briefing, out of the facts worked out when each version was
stored."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from bench.archive import END, Generator, living_documents
from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingHistory, BriefingRequest
from processors.documents import parse_document
from processors.id_conflicts import MAX_TITLED_PER_SOURCE
from processors.models import AxisSpec, Document, DocumentSummary
from processors.near_duplicates import DuplicateOf, similarity
from processors.relevance import AxisSpace
from processors.source_facts import ROW_FRONT_MATTER, heading_topic
from processors.window import window_bounds
from processors.window_rows import SourceRow
from processors.window_set import MemoryWindow
from sinks.state import Position, StateStore
from sinks.window_reads import StoredWindow
from tests.processors.near_dup_samples import ZH_NOTE, ZH_NOTE_EDITED
from tests.processors.notes import hostile_id_note
from tests.state_support import delete_path, document_record, raw_file, superseded_summaries, window_summaries
from tests.state_support import window_documents as whole_window

AXIS = AxisSpec(
    name="inference",
    keywords=("inference", "推理", "vLLM", "KV cache", "TTFT"),
    living_doc="living/inference.md",
)
AXES = (AXIS, AxisSpec(name="risk", keywords=("security", "安全", "攻击")))
WINDOW = window_bounds(END, timedelta(hours=24))
NOTES = 240  # of the seeded archive: 5-20 KB notes, zh and en, with exact and near copies among them


def _doc(path: str, text: str, when: datetime = END) -> Document:
    raw = raw_file(path, text.encode(), when.timestamp())
    return parse_document(raw, zone=END.tzinfo, keep_terms=frozenset({"vllm", "推理", "安全"}))  # type: ignore[arg-type]


def _documents() -> Iterator[Document]:
    gen = Generator()
    for i in range(NOTES):
        path, text, _ = gen.note(i)
        yield _doc(path, text)
    yield _doc("living/inference.md", living_documents()["living/inference.md"])
    # Yesterday's briefing (the baseline, dated before the window) and one of two days ago (left out).
    yield _doc(
        "inbox/tom/2026-09-26-inference-e1prep.md", "# inference · E1\n\n| 2605.01604 | 七大失败模式 |\n"
    )
    yield _doc("inbox/tom/2026-09-25-inference-e1prep.md", "# inference · E1\n\n| 2605.01605 | 更早 |\n")
    # A flush of this window written back by a writer: an own baseline dated in it.
    yield _doc("inbox/jay/2026-09-27-1840-inference-e1prep.md", "# inference · E1\n\nD196：x\n")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StateStore]:
    store = StateStore(tmp_path_factory.mktemp("window") / "worker.duckdb")
    docs = list(_documents())
    items = [(document_record(AXIS.name, d, n), Position("t.documents", 0, n)) for n, d in enumerate(docs)]
    for i in range(0, len(items), 97):  # batches of every size, as the window agent applies them
        store.apply_batch(items[i : i + 97])
    # A few notes revised (their first version superseded), one deleted.
    n = len(items)
    for k, d in enumerate(docs[3:6]):
        edited = _doc(d.path, d.text + "\n\n补充：vLLM 推理 TTFT 又降低了 5%。\n")
        store.apply_batch([(document_record(AXIS.name, edited, n + k), Position("t.documents", 0, n + k))])
    delete_path(store, AXIS.name, docs[7].path, END, raw_offset=n + 10)
    yield store
    store.close()


def _baseline(state: StateStore) -> Document | None:
    return state.latest_baseline(AXIS.name, WINDOW.start, WINDOW.start - timedelta(hours=24))


def _memory(state: StateStore) -> MemoryWindow:
    documents: list[DocumentSummary] = window_summaries(state, AXIS.name, WINDOW)
    baseline = _baseline(state)
    superseded = superseded_summaries(state, AXIS.name, WINDOW)
    return MemoryWindow(
        [*documents, *([baseline] if baseline else [])], superseded, (AXIS.name, WINDOW), AXES
    )


def _slim(rows: Iterable[SourceRow]) -> list[SourceRow]:
    """Rows as the state gives them: summaries without what it keeps as rows, columns and the topic line, and
    with only the front matter a briefing reads of every source."""
    slim: dict[str, object] = {"signature": (), "terms": {}, "headings": (), "titled": None}
    out = []
    for r in rows:
        doc = r.doc.summary() if isinstance(r.doc, Document) else r.doc
        topic = heading_topic(doc.title, doc.headings)
        front = {k: v for k, v in doc.front_matter.items() if k in ROW_FRONT_MATTER}
        out.append(replace(r, doc=doc.model_copy(update={**slim, "front_matter": front}), topic=topic))
    return out


@pytest.fixture
def stored(state: StateStore) -> Iterator[StoredWindow]:
    window = state.window(AXIS.name, WINDOW, _baseline(state))
    yield window
    window.close()


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.95])
def test_the_duplicates_are_those_of_the_summaries(
    state: StateStore, stored: StoredWindow, threshold: float
) -> None:
    expected = _memory(state).duplicates(threshold)
    assert stored.duplicates(threshold) == expected
    assert {d.kind for d in expected.values()} == {"exact", "near"}  # the archive plants both


def test_the_rows_and_statistics_are_those_of_the_summaries(state: StateStore, stored: StoredWindow) -> None:
    memory = _memory(state)
    assert stored.size() == memory.size() > NOTES - 10
    dups = memory.duplicates(0.8)
    space = AxisSpace.of(memory.statistics(dups.keys()), AXES, {AXIS.name: state.living_document(AXIS.name)})
    profile = space.profile_terms
    assert sorted(stored.rows(profile), key=lambda r: r.position) == _slim(memory.rows(profile))
    assert (
        sorted(stored.superseded(profile), key=lambda r: r.position)
        == _slim(memory.superseded(profile))
        != []
    )
    assert stored.arxiv_ids() == memory.arxiv_ids()
    got, want = stored.statistics(dups.keys()), memory.statistics(dups.keys())
    assert (got.documents, got.average_length) == (want.documents, want.average_length)
    terms = [*profile, "模型", "cache", "nowhere-at-all"]
    assert got.frequencies(terms) == want.frequencies(terms)


def test_the_stated_titles_are_those_of_the_summaries(state: StateStore, stored: StoredWindow) -> None:
    memory = _memory(state)
    dups = memory.duplicates(0.8)
    got, want = stored.titles(dups.keys()), memory.titles(dups.keys())
    assert got.best.titles() == want.best.titles() != {}
    assert got.pairs.pairs == want.pairs.pairs
    # Left out with its duplicates, a source's titles are no window's.
    stater = next(d for d in memory.docs if d.titled and d.path not in dups)
    alone = {p.id for p in (stater.titled or ()) if p.rank >= 0} - {
        p.id for d in memory.docs if d is not stater for p in (d.titled or ())
    }
    assert alone and not alone & stored.titles([*dups, stater.path]).best.titles().keys()


def test_a_note_stating_thousands_of_titles_is_bounded_alike_stored_or_held(tmp_path: Path) -> None:
    hostile = _doc("inbox/jay/2026-09-27-1000-hostile.md", hostile_id_note())
    other = _doc(
        "inbox/tom/2026-09-27-1100-b.md",
        "# b\n\n| arXiv | Title |\n|---|---|\n| 2609.10001 | Fluid-Guided Online Scheduling for LLM Inference |\n",
    )
    assert len(hostile.titled or ()) > MAX_TITLED_PER_SOURCE
    state = StateStore(tmp_path / "worker.duckdb")
    docs = [hostile, other]
    state.apply_batch(
        [(document_record(AXIS.name, d, n), Position("t.documents", 0, n)) for n, d in enumerate(docs)]
    )
    stored = state.window(AXIS.name, WINDOW, None)
    try:
        got, want = stored.titles(()), MemoryWindow(docs, [], (AXIS.name, WINDOW), AXES).titles(())
        assert got.best.titles() == want.best.titles() and len(want.best.titles()) > 2000
        assert got.pairs.pairs == want.pairs.pairs != []
    finally:
        stored.close()
        state.close()


def test_a_briefing_of_the_stored_window_is_the_briefing_of_its_documents(
    state: StateStore, stored: StoredWindow
) -> None:
    baseline = _baseline(state)
    whole = {d.path: d for d in whole_window(state, AXIS.name, WINDOW)}
    request = BriefingRequest(
        axis=AXIS,
        axes=AXES,
        trigger="flush",
        window=WINDOW,
        generated_at=END,
        zone=END.tzinfo,  # type: ignore[arg-type]
        documents=[*whole.values(), *([baseline] if baseline else [])],
        superseded=superseded_summaries(state, AXIS.name, WINDOW),
        living=state.living_document(AXIS.name),
        history=BriefingHistory.of([], [baseline.text] if baseline else []),
    )
    readable = {**whole, **({baseline.path: baseline} if baseline else {})}
    from_rows = assemble_briefing(
        BriefingRequest(
            **{
                **request.__dict__,
                "documents": (),
                "superseded": (),
                "source": stored,
                # As the stored window loads them: its baseline too (a note left out did not read back).
                "load": lambda paths: [readable[p] for p in paths if p in readable],
            }
        )
    )
    assert from_rows == assemble_briefing(request)
    assert len(from_rows.increments) >= 3 and any(s.status == "superseded" for s in from_rows.sources)


def test_each_version_s_facts_are_stored_once_whatever_its_axes(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    doc = _doc("inbox/jay/2026-09-27-1000-a.md", "# a\n\nvLLM 推理 KV cache 压缩。\n")
    items = [(document_record(a.name, doc, 1), Position("t.documents", 0, n)) for n, a in enumerate(AXES)]
    state.apply_batch(items[:1])
    state.apply_batch(items[1:])
    rows = state._db.execute("SELECT count(*), count(DISTINCT vid) FROM source_rows").fetchall()
    terms = state._db.execute("SELECT count(*) FROM source_terms").fetchall()
    assert rows == [(1, 1)] and terms == [(len(doc.terms),)]
    state.close()


def test_the_axis_s_own_baselines_in_the_window_are_named_for_their_d_numbers(stored: StoredWindow) -> None:
    assert stored.own_baselines() == ["inbox/jay/2026-09-27-1840-inference-e1prep.md"]
    assert [d.path for d in stored.load(stored.own_baselines())] == stored.own_baselines()


def test_yesterday_s_briefing_is_read_whole_as_the_baseline_and_an_axis_without_one_has_none(
    state: StateStore,
) -> None:
    baseline = _baseline(state)
    assert baseline is not None and baseline.path == "inbox/tom/2026-09-26-inference-e1prep.md"
    assert "| 2605.01604 | 七大失败模式 |" in baseline.text
    assert state.latest_baseline("risk", WINDOW.start, WINDOW.start - timedelta(hours=24)) is None


def test_a_pair_s_sketches_never_count_fewer_equal_slots_than_their_signatures() -> None:
    """The sketch weeds out LSH pairs before their slots are compared: it must never drop a pair that reaches
    the threshold, whatever slots two signatures share (and it drops unrelated ones)."""
    import random

    import duckdb
    from predigest_native import near_candidates, near_same

    from processors.near_duplicates import NUM_PERM, lsh_bands

    rng = random.Random(7)
    bands, rows = lsh_bands(0.8)
    db = duckdb.connect()
    for shared in (6, 20, 64, 100, 103, 110, 127, 128):
        x = [rng.getrandbits(64) for _ in range(NUM_PERM)]
        # The first band shared, so that the pair is an LSH candidate; the other shared slots anywhere.
        same = set(range(rows)) | set(rng.sample(range(rows, NUM_PERM), shared - rows))
        y = [v if i in same else rng.getrandbits(64) for i, v in enumerate(x)]
        pair = db.sql("SELECT unnest([0, 1])::BIGINT AS pos, unnest($1::UBIGINT[][]) AS s", params=[[x, y]])
        assert near_candidates(pair, bands, rows, shared) == [(1, 0)]
        assert near_same(pair, [(1, 0)]) == [(1, 0, shared)]
        if shared < 64:
            assert near_candidates(pair, bands, rows, 103) == []  # 0.8 of the slots: unrelated, weeded out


def test_signature_rows_of_another_shape_are_refused() -> None:
    import duckdb
    from predigest_native import near_candidates

    db = duckdb.connect()
    with pytest.raises(ValueError, match="BIGINT, UBIGINT"):
        near_candidates(db.sql("SELECT 1::BIGINT AS pos, [1.5] AS s"), 21, 6, 103)
    with pytest.raises(ValueError, match="different or too few slots"):
        near_candidates(db.sql("SELECT 1::BIGINT AS pos, [1::UBIGINT] AS s"), 21, 6, 103)


def test_a_banding_past_any_signature_is_refused_not_a_panic() -> None:
    """bands x rows_per_band overflowing usize wrapped to 0 slots a signature, and the band keys were then read
    past their end: a PanicException (a BaseException)."""
    import duckdb
    from predigest_native import near_candidates

    from processors.near_duplicates import NUM_PERM

    db = duckdb.connect()
    rows = db.sql(
        "SELECT unnest([0, 1])::BIGINT AS pos, [7::UBIGINT for _ in range($1)] AS s", params=[NUM_PERM]
    )
    with pytest.raises(ValueError, match="too few slots"):
        near_candidates(rows, 2**63, 2, 103)


def test_a_note_near_only_to_a_duplicate_is_listed_with_its_similarity_to_the_kept_one(
    tmp_path: Path,
) -> None:
    # b is near a; c is near b but further from a: c joins a's group through b, with its own similarity to a.
    b_text = ZH_NOTE_EDITED.replace("下一步值得对比一下 SGLang 的 RadixAttention 在同样负载下的表现。", "")
    c_text = b_text.replace(
        "如果结论成立，长文档摘要和代码补全这类场景的显存压力会明显下降。", "结论待复现。"
    )
    texts = {"a": ZH_NOTE, "b": b_text, "c": c_text}
    docs = {
        k: _doc(f"inbox/jay/{k}.md", text, END - timedelta(hours=3 - i))
        for i, (k, text) in enumerate(texts.items())
    }
    a, b, c = (docs[k].signature for k in "abc")
    threshold = (similarity(a, c) + similarity(b, c)) / 2
    assert similarity(a, c) < threshold <= similarity(b, c) and similarity(a, b) >= threshold
    state = StateStore(tmp_path / "worker.duckdb")
    state.apply_batch(
        [
            (document_record(AXIS.name, d, n), Position("t.documents", 0, n))
            for n, d in enumerate(docs.values())
        ]
    )
    window = state.window(AXIS.name, WINDOW, None)
    found = window.duplicates(threshold)
    window.close()
    state.close()
    assert found["inbox/jay/c.md"] == DuplicateOf(
        kept="inbox/jay/a.md", kind="near", similarity=similarity(a, c), matched="inbox/jay/b.md"
    )


def test_each_axis_s_living_document_is_its_latest_undeleted_version(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    first = _doc("living/inference.md", "# inference\n\n## KV cache\n\n旧版。\n", END - timedelta(days=2))
    latest = _doc("living/inference.md", "# inference\n\n## KV cache\n\n新版。\n", END - timedelta(days=1))
    risk = _doc("living/risk.md", "# risk\n\n## 攻击\n\n提示注入。\n", END - timedelta(days=1))
    for n, (axis, doc) in enumerate([("inference", first), ("risk", risk), ("inference", latest)]):
        state.apply_batch([(document_record(axis, doc, n), Position("t.documents", 0, n))])
    delete_path(state, "risk", "living/risk.md", END, raw_offset=5)
    found = state.living_documents(["inference", "risk", "llm-infra"])
    assert {axis: doc and doc.text for axis, doc in found.items()} == {
        "inference": latest.text,
        "risk": None,
        "llm-infra": None,
    }
    assert state.living_document("inference") == found["inference"]
    state.close()


class _SecondTableRunsOut:
    """A reader's cursor whose second statement runs out of memory: the window's superseded rows past the limit."""

    def __init__(self) -> None:
        self.statements = 0
        self.closed = False

    def execute(self, query: str, parameters: object = None) -> None:
        self.statements += 1
        if self.statements == 2:
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 16.0 MiB")

    def close(self) -> None:
        self.closed = True


def test_a_window_that_cannot_be_pinned_closes_its_cursor() -> None:
    # Its first temporary table (the whole window's rows) lives as long as the cursor: a command out of memory is
    # retried and then dead-lettered with the worker up, and each attempt's cursor held it until collected.
    cursor = _SecondTableRunsOut()
    with pytest.raises(duckdb.OutOfMemoryException):
        StoredWindow(cursor, AXIS.name, WINDOW)  # type: ignore[arg-type]
    assert cursor.closed
