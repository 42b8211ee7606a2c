"""The state as a materialised view of Kafka: applied offsets, raw-offset order, restored emissions, set-aside."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.documents import parse_document
from processors.models import Briefing, Document, RawFile
from processors.window import window_bounds
from sinks.duck import set_aside
from sinks.errors import StateUnreadableError
from sinks.state import Position, StateStore
from sinks.state_files import open_state
from tests.state_support import delete_path, put_document, superseded_summaries, window_documents

SH = ZoneInfo("Asia/Shanghai")
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))
PATH = "inbox/jay/2026-09-27-1000-a.md"
NOW = datetime(2026, 9, 28, 1, 2, 3, tzinfo=UTC)


def parsed(text: str, path: str = PATH) -> Document:
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


def at(offset: int, topic: str = "p.documents", partition: int = 2) -> Position:
    return Position(topic, partition, offset)


def current(state: StateStore) -> list[str]:
    return [d.text for d in window_documents(state, "inference", WINDOW)]


@pytest.fixture
def state(tmp_path: Path) -> StateStore:
    return StateStore(tmp_path / "worker.duckdb")


def test_records_at_or_below_the_applied_offset_are_skipped(state: StateStore) -> None:
    assert state.applied_offset("p.documents", 2) is None
    assert put_document(state, "inference", parsed("# a\nfirst"), raw_offset=10, position=at(0)) is True
    assert state.applied_offset("p.documents", 2) == 0
    # Offset 0 again, whatever it carries, is a replay: the state already holds it.
    assert put_document(state, "inference", parsed("# a\nother"), raw_offset=11, position=at(0)) is False
    assert current(state) == ["# a\nfirst"]
    state.mark_applied(at(5))
    assert state.offsets.all() == {("p.documents", 2): 5}
    state.mark_applied(at(3))  # never backwards
    assert state.applied_offset("p.documents", 2) == 5


def test_a_batch_that_fails_claims_no_offset_and_its_retry_stores_it(
    state: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The offsets are checked against a copy in memory: it must follow the rollback, or the retry (the
    # agent's must_finish) would find its records "applied" and drop them.
    put_document(state, "inference", parsed("# a\nfirst"), raw_offset=1, position=at(0))
    write = state.docs.write

    def fails(records: object) -> list[bool]:
        raise OSError("disk full")

    monkeypatch.setattr(state.docs, "write", fails)
    with pytest.raises(OSError):
        put_document(state, "inference", parsed("# a\nsecond"), raw_offset=2, position=at(1))
    assert state.applied_offset("p.documents", 2) == 0
    monkeypatch.setattr(state.docs, "write", write)
    assert put_document(state, "inference", parsed("# a\nsecond"), raw_offset=2, position=at(1)) is True
    assert current(state) == ["# a\nsecond"] and state.applied_offset("p.documents", 2) == 1


def test_a_batch_rolled_back_after_its_rows_were_planned_leaves_nothing_remembered(
    state: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sinks keep the last batch's paths in memory; a rollback after the rows were written (a later step
    # of the same transaction failing) must leave them as the file has them.
    put_document(state, "inference", parsed("# a\nfirst"), raw_offset=1, position=at(0))
    write = state.docs.write

    def writes_then_fails(records: list[object]) -> list[bool]:
        write(records)  # type: ignore[arg-type]
        raise OSError("the next step failed")

    monkeypatch.setattr(state.docs, "write", writes_then_fails)
    with pytest.raises(OSError):
        put_document(state, "inference", parsed("# a\nsecond"), raw_offset=2, position=at(1))
    monkeypatch.setattr(state.docs, "write", write)
    assert current(state) == ["# a\nfirst"]
    assert put_document(state, "inference", parsed("# a\nsecond"), raw_offset=2, position=at(1)) is True
    assert put_document(state, "inference", parsed("# a\nthird"), raw_offset=3, position=at(2)) is True
    assert current(state) == ["# a\nthird"] and len(superseded_summaries(state, "inference", WINDOW)) == 2


def test_a_reopened_state_knows_its_paths_and_offsets(tmp_path: Path) -> None:
    first = StateStore(tmp_path / "worker.duckdb")
    put_document(first, "inference", parsed("# a\nfirst"), raw_offset=1, position=at(0))
    first.close()
    state = StateStore(tmp_path / "worker.duckdb")
    assert put_document(state, "inference", parsed("# a\nfirst"), raw_offset=1, position=at(0)) is False
    assert put_document(state, "inference", parsed("# a\nsecond"), raw_offset=2, position=at(1)) is True
    assert current(state) == ["# a\nsecond"]
    assert [d.text for d in window_documents(state, "inference", WINDOW)] == ["# a\nsecond"]
    assert len(superseded_summaries(state, "inference", WINDOW)) == 1


def test_versions_follow_the_raw_offset_whatever_order_they_arrive_in(state: StateStore) -> None:
    # A takeover can re-parse raw records: their versions reach the documents topic a second time, later.
    v1, v2 = parsed("# a\nfirst"), parsed("# a\nsecond")
    put_document(state, "inference", v2, raw_offset=21, position=at(0))
    assert put_document(state, "inference", v1, raw_offset=20, position=at(1)) is False
    assert current(state) == ["# a\nsecond"]
    assert [d.sha256 for d in superseded_summaries(state, "inference", WINDOW)] == [v1.sha256]


def test_a_deletion_orders_with_the_versions(state: StateStore) -> None:
    put_document(state, "inference", parsed("# a\nfirst"), raw_offset=1)
    delete_path(state, "inference", PATH, NOW, raw_offset=3)
    put_document(state, "inference", parsed("# a\nbefore the deletion"), raw_offset=2)  # late replay
    assert current(state) == []
    put_document(state, "inference", parsed("# a\nrewritten"), raw_offset=4)
    assert current(state) == ["# a\nrewritten"]
    delete_path(state, "inference", PATH, NOW, raw_offset=3)  # the old deletion replayed: stale
    assert current(state) == ["# a\nrewritten"]


def test_events_without_a_raw_offset_keep_arrival_order(state: StateStore) -> None:
    # Records written before raw offsets travelled on the documents topic.
    put_document(state, "inference", parsed("# a\nfirst"), raw_offset=None)
    put_document(state, "inference", parsed("# a\nsecond"), raw_offset=None)
    assert current(state) == ["# a\nsecond"]
    put_document(state, "inference", parsed("# a\nthird"), raw_offset=40)
    assert current(state) == ["# a\nthird"]


def _briefing() -> Briefing:
    return Briefing.model_validate(
        {
            "schema": "predigest.briefing/v1",
            "axis": "inference",
            "trigger": "close",
            "generated_at": "2026-09-27T22:25:00+08:00",
            "window": {"start": "2026-09-26T22:20:00+08:00", "end": "2026-09-27T22:20:00+08:00"},
            "living_doc": {"path": None, "version": None},
            "summary": {"increment_count": 0, "target_range": [3, 8], "new_arxiv": [], "continued_arxiv": []},
            "sources": [],
            "increments": [],
            "discrepancies": [],
            "arxiv": [],
            "no_increment_sources": [],
            "priorities": [],
            "rejected": [],
        }
    )


def test_emissions_restored_from_the_briefings_topic(state: StateStore) -> None:
    b = _briefing()
    pos = at(0, topic="p.briefings", partition=0)
    assert state.restore_emission(b, "2026-09-27-inference-e1prep", pos) is True
    assert state.restore_emission(b, "2026-09-27-inference-e1prep", at(1, "p.briefings", 0)) is False
    assert state.emission("inference", b.window.end, "close") == b
    assert state.last_emitted_at("inference") == b.generated_at
    assert state.applied_offset("p.briefings", 0) == 1


def _leave_a_corrupt_wal(path: Path) -> None:
    # A writer killed before its checkpoint leaves the WAL; flipped bits make DuckDB refuse to replay it.
    code = (
        "import duckdb, os, sys\n"
        "c = duckdb.connect(sys.argv[1])\n"
        "c.execute(\"SET wal_autocheckpoint='1GB'\")\n"
        "c.execute('CREATE TABLE t(a INT PRIMARY KEY, b VARCHAR)')\n"
        "c.execute('CHECKPOINT')\n"
        "for i in range(50): c.execute('INSERT INTO t VALUES (?, ?)', [i, 'x' * 100])\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    wal = path.with_name(path.name + ".wal")
    data = bytearray(wal.read_bytes())
    for i in range(200, len(data) - 100, 7):
        data[i] ^= 0x5A
    wal.write_bytes(bytes(data))


def test_a_wal_duckdb_cannot_replay_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    _leave_a_corrupt_wal(path)
    with pytest.raises(StateUnreadableError, match="WAL"):
        StateStore(path)
    state, aside = open_state(path, NOW)
    assert aside is not None and aside.name == "worker.duckdb.unreadable-20260928T010203000000Z"
    assert aside.exists() and aside.with_name(aside.name + ".wal").exists()
    assert state.offsets.all() == {} and state.document_count() == 0


def test_a_file_that_is_not_duckdb_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    path.write_bytes(b"not a database" * 100)
    state, aside = open_state(path, NOW)
    assert aside is not None and aside.read_bytes().startswith(b"not a database")
    assert state.document_count() == 0
    assert set_aside(tmp_path / "absent.duckdb", NOW, "rebuild") is None
