"""`StateStore.apply_batch`: a batch, however it is cut, leaves the state and the outcomes one-by-one would."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.documents import parse_document
from processors.models import RawFile
from processors.window import window_bounds
from processors.wire import DocumentRecord, EventHeader, store_document
from sinks.state import Position, StateStore
from tests.state_support import window_documents, with_keys

# Slower than a unit test by design (many cases, worst-case inputs, or processes): its own bound.
pytestmark = pytest.mark.timeout(120)

SH = ZoneInfo("Asia/Shanghai")
AXES = ("inference", "risk")
PATHS = ("inbox/jay/2026-09-27-1000-a.md", "inbox/tom/2026-09-27-1100-b.md")
TEXTS = ("# a\nfirst", "# a\nsecond", "# a\nthird")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))


def _stored(path: str, text: str) -> tuple[str, DocumentRecord]:
    data = text.encode()
    sha = hashlib.sha256(data).hexdigest()
    doc = parse_document(RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=sha), zone=SH)
    header = EventHeader(
        type="document",
        path=path,
        sha256=sha,
        seen_at=NOW,
        raw_offset=None,
        kind=doc.kind,
        event_time=doc.event_time,
    )
    return sha, DocumentRecord(header, store_document(doc))


DOCS = {(p, t): _stored(p, t) for p in PATHS for t in TEXTS}

op = st.tuples(
    st.sampled_from(["document", "document", "deletion", "rejection", "none"]),
    st.sampled_from(AXES),
    st.sampled_from(PATHS),
    st.sampled_from(TEXTS),
    st.one_of(st.none(), st.integers(0, 12)),  # raw offset; None: a record from before 0.2
    st.integers(0, 1),  # documents partition
    st.booleans(),  # a replay of an earlier offset of that partition
)


def _records(
    ops: list[tuple[str, str, str, str, int | None, int, bool]],
) -> list[tuple[DocumentRecord, Position]]:
    next_offset = [0, 0]
    out = []
    for kind, axis, path, text, raw_offset, part, replay in ops:
        offset = max(0, next_offset[part] - 2) if replay and next_offset[part] else next_offset[part]
        next_offset[part] = max(next_offset[part], offset + 1)
        sha, doc = DOCS[(path, text)]
        if kind == "document":
            header = doc.header.model_copy(update={"axis": axis, "raw_offset": raw_offset})
            record = DocumentRecord(header, doc.stored)
        else:
            record = DocumentRecord(
                EventHeader(
                    type="rejection" if kind == "rejection" else "deletion",
                    path=path,
                    sha256=sha,
                    seen_at=NOW + timedelta(seconds=offset),
                    axis=None if kind == "none" else axis,
                    raw_offset=raw_offset,
                    reason="rejected" if kind == "rejection" else None,
                )
            )
        out.append((record, Position("p.documents", part, offset)))
    return out


def _dump(state: StateStore) -> tuple[object, ...]:
    db = state._db
    _assert_each_version_once(state)
    return (
        db.execute("SELECT axis, path, sha256, current, raw_offset FROM documents ORDER BY ALL").fetchall(),
        db.execute("SELECT * FROM contents ORDER BY ALL").fetchall(),
        db.execute("SELECT path, sha256, summary_json FROM source_rows ORDER BY ALL").fetchall(),
        db.execute("SELECT * FROM deletions ORDER BY ALL").fetchall(),
        db.execute("SELECT * FROM rejected ORDER BY ALL").fetchall(),
        db.execute("SELECT * FROM applied ORDER BY ALL").fetchall(),
        # The arrival order of versions, which `current` falls back on without raw offsets.
        db.execute("SELECT axis, path, sha256 FROM documents ORDER BY seq").fetchall(),
    )


def _assert_each_version_once(state: StateStore) -> None:
    """No key holds these tables' rows unique (sinks/schema.py): the write plan does, and a version's contents and
    source rows come together."""
    db = state._db
    for table, key in (
        ("documents", "axis, path, sha256"),
        ("contents", "path, sha256"),
        ("source_rows", "path, sha256"),
    ):
        assert db.execute(f"SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1").fetchall() == [], (
            table
        )
    assert (
        db.execute("SELECT path, sha256 FROM contents ORDER BY ALL").fetchall()
        == db.execute("SELECT path, sha256 FROM source_rows ORDER BY ALL").fetchall()
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=14), cuts=st.lists(st.integers(1, 14), max_size=6))
def test_a_batch_applies_as_its_records_would_one_by_one(
    ops: list[tuple[str, str, str, str, int | None, int, bool]], cuts: list[int]
) -> None:
    records = _records(ops)
    one, batched = StateStore(Path(":memory:")), StateStore(Path(":memory:"))
    try:
        expected = [r for item in records for r in one.apply_batch([item])]
        got: list[bool] = []
        start = 0
        for cut in [*sorted(set(cuts)), len(records)]:
            got += batched.apply_batch(records[start:cut])
            start = max(start, cut)
        got += batched.apply_batch(records[start:])
        assert got == expected
        assert _dump(batched) == _dump(one)
        assert [d.text for d in window_documents(batched, "inference", WINDOW)] == [
            d.text for d in window_documents(one, "inference", WINDOW)
        ]
    finally:
        one.close()
        batched.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=14), cuts=st.lists(st.integers(1, 14), max_size=6))
def test_a_state_made_with_keys_by_an_earlier_release_stores_the_same_rows(
    ops: list[tuple[str, str, str, str, int | None, int, bool]], cuts: list[int]
) -> None:
    records = _records(ops)
    keyed, keyless = with_keys(StateStore(Path(":memory:"))), StateStore(Path(":memory:"))
    try:
        outcomes = []
        start = 0
        for cut in [*sorted(set(cuts)), len(records)]:
            outcomes.append((keyed.apply_batch(records[start:cut]), keyless.apply_batch(records[start:cut])))
            start = max(start, cut)
        assert all(a == b for a, b in outcomes)
        assert _dump(keyed) == _dump(keyless)
    finally:
        keyed.close()
        keyless.close()


def _grouped(
    records: list[tuple[DocumentRecord, Position]], joins: list[bool]
) -> list[list[tuple[DocumentRecord, Position]]]:
    """The records as v3 rows: one joining the record before it (same partition) becomes its next row."""
    out: list[list[tuple[DocumentRecord, Position]]] = []
    for (record, position), join in zip(records, joins + [False] * len(records), strict=False):
        last = out[-1][-1][1] if out else None
        if join and last is not None and last.partition == position.partition:
            out[-1].append((record, replace(last, row=last.row + 1)))
        else:
            out.append([(record, position)])
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(op, min_size=1, max_size=14),
    joins=st.lists(st.booleans(), max_size=14),
    cuts=st.lists(st.integers(1, 14), max_size=6),
)
def test_records_of_several_rows_apply_in_batches_as_one_by_one(
    ops: list[tuple[str, str, str, str, int | None, int, bool]], joins: list[bool], cuts: list[int]
) -> None:
    grouped = _grouped(_records(ops), joins)
    one, batched = StateStore(Path(":memory:")), StateStore(Path(":memory:"))
    try:
        expected = [r for record in grouped for r in one.apply_batch(record)]
        got: list[bool] = []
        start = 0
        for cut in [*sorted(set(cuts)), len(grouped)]:  # cut between records, never inside one
            got += batched.apply_batch([row for record in grouped[start:cut] for row in record])
            start = max(start, cut)
        assert got == expected
        assert _dump(batched) == _dump(one)
    finally:
        one.close()
        batched.close()


def test_one_batch_of_a_version_its_deletion_and_a_restore(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "s.duckdb")
    sha, doc = DOCS[(PATHS[0], TEXTS[0])]
    _, doc2 = DOCS[(PATHS[0], TEXTS[1])]

    def at(raw: int) -> DocumentRecord:
        return DocumentRecord(
            doc.header.model_copy(update={"axis": "inference", "raw_offset": raw}), doc.stored
        )

    deletion = DocumentRecord(
        EventHeader(type="deletion", path=PATHS[0], sha256="", seen_at=NOW, axis="inference", raw_offset=2)
    )
    newer = DocumentRecord(doc2.header.model_copy(update={"axis": "inference", "raw_offset": 3}), doc2.stored)
    positions = [Position("p.documents", 0, i) for i in range(4)]
    out = state.apply_batch(list(zip([at(1), deletion, at(4), newer], positions, strict=True)))
    # Stored, deleted, restored with the same bytes (current again), then superseded by an older raw offset.
    assert out == [True, True, True, False]
    assert [d.sha256 for d in window_documents(state, "inference", WINDOW)] == [sha]
    assert state.applied_offset("p.documents", 0) == 3
    assert state.apply_batch(list(zip([at(9)], positions[:1], strict=True))) == [False]  # a replay


def test_a_record_s_rows_are_claimed_together_and_its_replay_changes_nothing() -> None:
    sha, doc = DOCS[(PATHS[0], TEXTS[0])]
    rows = [
        DocumentRecord(doc.header.model_copy(update={"axis": a, "raw_offset": 1}), doc.stored) for a in AXES
    ]
    record = [(row, Position("p.documents", 0, 5, i)) for i, row in enumerate(rows)]
    state = StateStore(Path(":memory:"))
    try:
        # Delivered twice in one batch (a retried fetch): its second copy changes nothing.
        assert state.apply_batch(record + record) == [True, True, False, False]
        assert state.applied_offset("p.documents", 0) == 5
        assert state.apply_batch(record) == [False, False]  # a replay after the commit
        for axis in AXES:
            assert [d.sha256 for d in window_documents(state, axis, WINDOW)] == [sha]
    finally:
        state.close()


def test_each_version_stores_its_own_notes_time_when_notes_interleave() -> None:
    """A note's rows share its header's time (converted once): rows of notes of other times in between, a naive
    time among them, still store each record's own."""
    a = _stored(PATHS[0], TEXTS[0])[1]
    b = _stored(PATHS[1], TEXTS[1])[1]
    times = {
        PATHS[0]: datetime(2026, 9, 27, 9, 30, tzinfo=SH),
        PATHS[1]: datetime(2026, 9, 26, 23, 5),  # noqa: DTZ001 naive: UTC, as the connection reads it
    }
    rows = []
    for axis in AXES:  # a's row, b's row, a's row, b's row
        for record in (a, b):
            update = {"axis": axis, "event_time": times[record.header.path]}
            rows.append(DocumentRecord(record.header.model_copy(update=update), record.stored))
    state = StateStore(Path(":memory:"))
    state.apply_batch([(r, None) for r in rows])
    stored = state._db.execute("SELECT axis, path, event_time FROM documents ORDER BY axis, path").fetchall()
    assert [(axis, path, at.astimezone(UTC)) for axis, path, at in stored] == [
        (axis, path, times[path].replace(tzinfo=times[path].tzinfo or UTC).astimezone(UTC))
        for axis in sorted(AXES)
        for path in sorted(PATHS)
    ]
