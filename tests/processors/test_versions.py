"""The state's version rules, without DuckDB: raw offsets order a path's versions, a newer deletion or refusal
wins."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from processors.versions import BatchPlan, Deletion, Key, PathVersions
from processors.wire import DocumentRecord, EventHeader, StoredDocument

NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
KEYS: list[Key] = [("inference", "inbox/a.md"), ("inference", "inbox/b.md"), ("risk", "inbox/a.md")]
SHAS = ("a1", "b2", "c3")
REFUSED = "refused-symlink"  # a refusal's digest (streams.root_files.refusal_record)
STORED = StoredDocument(summary_json="{}", body_json="{}")


def visible(path: PathVersions) -> str | None:
    """The sha256 a briefing sees (the state's `current` flag, no deletion row and no rejection row of the axis):
    the current version unless the path is deleted or refused since."""
    return None if path.deletion is not None or path.refused is not None else path.current()


def document(key: Key, sha: str, raw_offset: int | None) -> DocumentRecord:
    header = EventHeader(
        type="document",
        path=key[1],
        sha256=sha,
        seen_at=NOW,
        axis=key[0],
        raw_offset=raw_offset,
        kind="inbox",
        event_time=NOW,
    )
    return DocumentRecord(header, STORED)


def deletion(key: Key, raw_offset: int | None) -> DocumentRecord:
    header = EventHeader(
        type="deletion",
        path=key[1],
        sha256="",
        seen_at=NOW + timedelta(seconds=raw_offset or 0),
        axis=key[0],
        raw_offset=raw_offset,
    )
    return DocumentRecord(header)


def rejection(key: Key, raw_offset: int | None, sha: str = REFUSED) -> DocumentRecord:
    header = EventHeader(
        type="rejection",
        path=key[1],
        sha256=sha,
        seen_at=NOW + timedelta(seconds=raw_offset or 0),
        axis=key[0],
        raw_offset=raw_offset,
        reason="it is a symlink",
        reason_code="symlink",
    )
    return DocumentRecord(header)


def plan() -> BatchPlan:
    return BatchPlan({}, itertools.count(1).__next__)


def snapshot(p: BatchPlan, *, with_arrival: bool = False) -> dict[Key, object]:
    """Per path: the version a briefing sees, the deletion and refusal, and each version's raw offset (and
    arrival)."""
    return {
        k: (
            visible(v),
            v.deletion,
            v.refused,
            {sha: (x.raw_offset, x.seq if with_arrival else None) for sha, x in v.versions.items()},
        )
        for k, v in p.paths.items()
    }


# One path's records in raw order: a version (one of SHAS), a deletion (None) or a refusal (REFUSED).
step = st.one_of(st.sampled_from(SHAS), st.none(), st.just(REFUSED))
histories = st.lists(st.lists(step, max_size=6), min_size=len(KEYS), max_size=len(KEYS))


def raw_records(history: list[list[str | None]]) -> list[list[DocumentRecord]]:
    """Each path's records with raw offsets as `predigest.raw` gives them: rising, shared across paths."""
    offsets = itertools.count()
    out: list[list[DocumentRecord]] = [[] for _ in KEYS]
    # Round-robin: raw offsets interleave across paths the way one raw partition would.
    for depth in range(max((len(h) for h in history), default=0)):
        for i, h in enumerate(history):
            if depth < len(h):
                sha = h[depth]
                key = KEYS[i]
                offset = next(offsets)
                if sha == REFUSED:
                    out[i].append(rejection(key, offset))
                else:
                    out[i].append(document(key, sha, offset) if sha else deletion(key, offset))
    return out


def expected(history: list[str | None]) -> tuple[str | None, bool]:
    """What a reader expects of one path: the last version written, unless a deletion or refusal came after it;
    and whether it is listed as rejected (its last record is a refusal)."""
    visible: str | None = None
    for sha in history:
        visible = sha if sha != REFUSED else None  # a deletion or refusal after a version hides it
    return visible, bool(history) and history[-1] == REFUSED


@given(history=histories, order=st.lists(st.integers(0, len(KEYS) - 1), max_size=40), data=st.data())
def test_any_order_that_keeps_each_paths_raw_order_gives_the_same_state(
    history: list[list[str | None]], order: list[int], data: st.DataObject
) -> None:
    per_path = raw_records(history)
    in_raw_order = sorted((r for rs in per_path for r in rs), key=lambda r: r.header.raw_offset or 0)
    reference = plan()
    reference_outcomes = {id(r): reference.apply(r) for r in in_raw_order}

    # Another interleaving (a takeover's replay, several documents partitions): each path keeps its order.
    queues = [list(rs) for rs in per_path]
    interleaved = []
    for i in order:
        if queues[i]:
            interleaved.append(queues[i].pop(0))
    interleaved += [r for q in queues for r in q]
    other = plan()
    assert {id(r): other.apply(r) for r in interleaved} == reference_outcomes
    assert snapshot(other) == snapshot(reference)
    for i, key in enumerate(KEYS):
        if key in reference.paths:
            path = reference.paths[key]
            assert (visible(path), path.refused is not None) == expected(history[i])

    # A replayed record, whichever, changes nothing and is not seen by a briefing again.
    replayed = data.draw(st.sampled_from(in_raw_order)) if in_raw_order else None
    if replayed is not None and replayed.header.type == "document":
        before = snapshot(reference, with_arrival=True)
        assert reference.apply(replayed) is False
        assert snapshot(reference, with_arrival=True) == before


@given(
    offsets=st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True),
    gap=st.integers(1, 5),
    late=st.integers(0, 50),
)
def test_a_deletion_with_a_newer_offset_wins(offsets: list[int], gap: int, late: int) -> None:
    key = KEYS[0]
    p = plan()
    for n, offset in enumerate(offsets):  # versions in any order of their raw offsets
        p.apply(document(key, SHAS[n % len(SHAS)], offset))
    deleted_at = max(offsets) + gap
    assert p.apply(deletion(key, deleted_at)) is True
    assert visible(p.paths[key]) is None
    # A version written before the deletion, arriving late (a replay), stays deleted …
    older = min(late, deleted_at - 1)
    assert p.apply(document(key, "zz", older)) is False
    assert p.apply(deletion(key, deleted_at)) is False  # the deletion replayed: nothing more to do
    assert visible(p.paths[key]) is None
    # … and one written after it brings the path back.
    assert p.apply(document(key, SHAS[0], deleted_at + 1)) is True
    assert visible(p.paths[key]) == SHAS[0]
    # A deletion older than the current version loses.
    assert p.apply(deletion(key, deleted_at)) is False


def test_a_deletion_of_a_path_never_held_changes_nothing() -> None:
    p = plan()
    assert p.apply(deletion(KEYS[0], 3)) is False
    assert p.apply(document(KEYS[0], "a1", 1)) is True
    assert visible(p.paths[KEYS[0]]) == "a1"


def test_a_file_restored_to_earlier_bytes_is_current_again() -> None:
    key = KEYS[0]
    p = plan()
    assert [p.apply(document(key, sha, n)) for n, sha in enumerate(["a1", "b2", "a1"])] == [True, True, True]
    assert visible(p.paths[key]) == "a1"
    assert p.apply(document(key, "b2", 1)) is False  # the middle version replayed


def test_versions_without_a_raw_offset_follow_arrival_and_yield_to_one_with_an_offset() -> None:
    key = KEYS[0]
    p = plan()
    p.apply(document(key, "a1", None))
    assert p.apply(document(key, "b2", None)) is True
    assert visible(p.paths[key]) == "b2"
    assert p.apply(document(key, "c3", 40)) is True
    assert p.apply(document(key, "d4", None)) is False  # without an offset, below every version with one
    assert visible(p.paths[key]) == "c3"


def test_the_plan_says_what_to_write_for_the_paths_the_state_held() -> None:
    key = KEYS[0]
    p0 = BatchPlan({}, itertools.count(1).__next__)
    p0.apply(document(key, "a1", 1))
    held = p0.paths[key]
    p = BatchPlan({key: held}, itertools.count(10).__next__)
    assert p.apply(document(key, "a1", 5)) is True  # the stored version, raised
    assert p.apply(document(key, "b2", 3)) is False  # new, but older than the current one
    assert p.apply(deletion(key, 7)) is True
    assert p.raised == {(*key, "a1"): 5}
    assert list(p.new_versions) == [(*key, "b2")]
    assert p.touched == {key} and p.current_of(key) == "a1"
    changed = p.deletions_changed()
    assert list(changed) == [key]
    assert changed[key] == Deletion(NOW + timedelta(seconds=7), 7)


def test_a_refusal_hides_the_versions_before_it_until_the_same_bytes_come_back() -> None:
    key = KEYS[0]
    p = plan()
    assert p.apply(document(key, "a1", 1)) is True
    assert p.apply(rejection(key, 2)) is True
    assert visible(p.paths[key]) is None and p.paths[key].refused is not None
    assert p.apply(document(key, "a1", 1)) is False  # the old version replayed: still refused
    assert p.apply(rejection(key, 2)) is False  # the refusal replayed: nothing more to do
    # The file back with the same bytes: a stored version raised, current and seen again, no longer refused.
    assert p.apply(document(key, "a1", 3)) is True
    assert visible(p.paths[key]) == "a1" and p.paths[key].refused is None
    assert list(p.new_versions) == [(*key, "a1")] and p.raised == {}  # stored once, its offset the latest
    assert p.apply(rejection(key, 2)) is False  # an older refusal arriving late loses


def test_a_refused_file_deleted_is_no_longer_refused_and_a_deletion_refused_again_is() -> None:
    key = KEYS[0]
    p = plan()
    assert p.apply(rejection(key, 1)) is True  # refused at once: no version held
    assert p.apply(deletion(key, 2)) is True  # what a briefing lists changed
    assert p.paths[key].refused is None and p.paths[key].deletion is None
    assert p.refusals_changed() == {} and p.deletions_changed() == {}
    p.apply(document(key, "a1", 3))
    p.apply(deletion(key, 4))
    assert p.apply(rejection(key, 5)) is True  # the file back, refused: listed, no longer deleted
    assert p.paths[key].deletion is None and p.paths[key].refused is not None


def test_a_rejection_without_an_axis_is_listed_until_a_record_of_its_path_with_one() -> None:
    key = KEYS[0]
    held = BatchPlan({}, itertools.count(1).__next__, legacy={"inbox/b.md"})
    old = rejection(("", key[1]), 1).header.model_copy(update={"axis": None})
    assert held.apply(DocumentRecord(old)) is True
    assert list(held.legacy) == [key[1]]
    assert held.apply(document(key, "a1", 2)) is True
    assert held.legacy == {} and held.legacy_dropped == {key[1]}
    assert held.apply(deletion(("risk", "inbox/b.md"), 3)) is False  # nothing of it held, but its row goes
    assert held.legacy_dropped == {key[1], "inbox/b.md"}
