"""The one DuckDB opener: a lock, a folder problem and a damaged file are told apart; damage is found at open."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from processors.window import window_bounds
from sinks.arxiv_cache import ArxivCache
from sinks.duck import (
    Limits,
    checkpoint_out_of_memory,
    out_of_memory,
    set_aside,
    unusable,
)
from sinks.errors import StateLocationError, StateUnreadableError
from sinks.ledger import Ledger
from sinks.state import Position, StateStore
from sinks.state_files import open_state
from tests.clocks import ManualClock
from tests.state_support import SH, document_record, parsed, window_documents

NOW = datetime(2026, 9, 28, 1, 2, 3, tzinfo=UTC)
WINDOW = window_bounds(datetime(2026, 9, 27, 22, 20, tzinfo=SH), timedelta(hours=24))


def _filled(path: Path, notes: int = 200) -> Path:
    state = StateStore(path)
    docs = [
        parsed(f"inbox/jay/2026-09-27-1000-n{i}.md", f"# note {i}\n" + "vLLM KV cache. " * 80)
        for i in range(notes)
    ]
    state.apply_batch(
        [(document_record("inference", d, i), Position("p.documents", 0, i)) for i, d in enumerate(docs)]
    )
    state.close()
    return path


def test_a_state_file_truncated_to_half_is_found_at_open_and_set_aside(tmp_path: Path) -> None:
    path = _filled(tmp_path / "worker.duckdb")
    whole = path.read_bytes()
    path.write_bytes(
        whole[: len(whole) // 2]
    )  # as after a disk fault: DuckDB itself opens it and counts rows
    with pytest.raises(StateUnreadableError, match="truncated"):
        StateStore(path)
    state, aside = open_state(path, NOW)
    assert aside is not None and aside.name == "worker.duckdb.unreadable-20260928T010203000000Z"
    assert aside.read_bytes() == whole[: len(whole) // 2]  # kept as it was, for a post-mortem
    assert state.offsets.all() == {} and state.document_count() == 0  # the catch-up replays from 0
    state.close()


def test_a_file_whose_free_blocks_duckdb_cut_off_opens(tmp_path: Path) -> None:
    # DuckDB drops free blocks at the end of the file at a checkpoint but still counts them: a healthy state
    # was taken for a truncated one and set aside (a rebuild from Kafka at every such restart).
    path = _filled(tmp_path / "worker.duckdb")
    state = StateStore(path)
    state._db.execute("CREATE TABLE scratch AS SELECT repeat('x', 1000) || i AS v FROM range(20000) t(i)")
    state._db.execute("CHECKPOINT")
    state._db.execute("DROP TABLE scratch")
    state.close()
    state = StateStore(path)
    assert state.document_count() == 200
    state.check()
    state.close()


def test_a_damaged_block_is_found_at_open(tmp_path: Path) -> None:
    path = _filled(tmp_path / "worker.duckdb")
    db = duckdb.connect(str(path))
    block = db.execute("SELECT max(block_id) FROM pragma_storage_info('contents')").fetchone()
    size = db.execute("SELECT block_size FROM pragma_database_size()").fetchone()
    db.close()
    assert block is not None and size is not None
    data = bytearray(path.read_bytes())
    start = 3 * 4096 + block[0] * size[0]  # DuckDB's headers, then the blocks
    for i in range(start + 64, start + size[0], 101):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(StateUnreadableError, match="checksum"):
        StateStore(path)


def test_a_block_damaged_while_the_worker_runs_is_found_by_its_check_a_step_at_a_time(tmp_path: Path) -> None:
    path = _filled(tmp_path / "worker.duckdb")
    state = StateStore(path, Limits(memory_mib=96, threads=1))
    try:
        block = state._db.execute("SELECT max(block_id) FROM pragma_storage_info('contents')").fetchone()
        size = state._db.execute("SELECT block_size FROM pragma_database_size()").fetchone()
        assert block is not None and size is not None
        with state.lowered_limit(1):  # every block read from disk again, none from DuckDB's cache
            pass
        start = 3 * 4096 + block[0] * size[0]
        with path.open("r+b") as f:
            f.seek(start + 64)
            damaged = bytes(b ^ 0x5A for b in f.read(size[0] - 64))
            f.seek(start + 64)
            f.write(damaged)
        with pytest.raises(StateUnreadableError, match="checksum"):
            state.check(state.shed_cache)
    finally:
        state.close()


def test_a_sound_file_passes_the_check_and_keeps_its_documents(tmp_path: Path) -> None:
    path = _filled(tmp_path / "worker.duckdb", notes=20)
    state = StateStore(path)
    state.check()  # the hook a readiness probe calls while the worker runs
    assert len(window_documents(state, "inference", WINDOW)) == 20
    state.close()


def test_a_check_whose_state_was_closed_under_it_is_not_taken_for_damage(tmp_path: Path) -> None:
    # The running worker's check reads on a cursor in a thread; the state may be reopened or replaced meanwhile,
    # and a check that called that damage would set a sound file aside (streams.state_guard skips it instead).
    state = StateStore(tmp_path / "worker.duckdb")
    reader = state.reader()
    state.close()
    with pytest.raises(duckdb.ConnectionException):
        reader.check()


def test_a_folder_that_cannot_be_made_is_not_taken_for_damage(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file where the folder should be")
    path = tmp_path / "state" / "worker.duckdb"
    with pytest.raises(StateLocationError, match="folder"):
        StateStore(path)
    with pytest.raises(StateLocationError):
        open_state(path, NOW)  # nothing to set aside: the operator fixes the path
    assert (tmp_path / "state").read_text() == "a file where the folder should be"


def test_a_damaged_ledger_says_so_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(StateUnreadableError, match=r"watcher ledger .* republishes every file"):
        Ledger(path)


def test_a_damaged_arxiv_cache_is_set_aside_and_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "arxiv-cache.duckdb"
    path.write_bytes(b"not a database" * 100)
    cache = ArxivCache(path, clock=ManualClock(NOW))
    assert cache.get_many(["2609.23130"]) == {}
    cache.close()
    assert (tmp_path / "arxiv-cache.duckdb.unreadable-20260928T010203000000Z").exists()


def test_set_aside_of_an_absent_file_does_nothing(tmp_path: Path) -> None:
    assert set_aside(tmp_path / "absent.duckdb", NOW, "rebuild") is None


_HINT = "\n\nPossible solutions:\n* Increasing the memory limit (SET memory_limit='...GB')"


@pytest.mark.parametrize(
    ("error", "invalidated", "reason"),
    [
        # As DuckDB 2.0 raised them in a worker whose briefing read the state while a batch was committed.
        (
            duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: failed to pin block of size 256.0 KiB "
                "(63.9 MiB/64.0 MiB used)" + _HINT
            ),
            False,
            "failed to pin block of size 256.0 KiB (63.9 MiB/64.0 MiB used)",
        ),
        (
            duckdb.FatalException(
                "FATAL Error: Failed to rollback transaction. Cannot continue operation.\nOriginal Error: Out of "
                "Memory Error: failed to pin block of size 256.0 KiB (63.8 MiB/64.0 MiB used)" + _HINT
            ),
            True,
            "failed to pin block of size 256.0 KiB (63.8 MiB/64.0 MiB used)",
        ),
        (
            duckdb.OutOfMemoryException(
                "Out of Memory Error: failed to allocate data of size 4.0 KiB (65.8 MiB/64.0 MiB used)"
                + _HINT
            ),
            False,
            "failed to allocate data of size 4.0 KiB (65.8 MiB/64.0 MiB used)",
        ),
        (duckdb.ConstraintException("Constraint Error: Duplicate key"), False, None),
    ],
    ids=["commit", "rollback", "statement", "other"],
)
def test_a_commit_that_ran_out_of_memory_is_told_from_other_errors(
    error: duckdb.Error, invalidated: bool, reason: str | None
) -> None:
    # A commit past the limit (a reader holding the memory meanwhile) is retried with more memory like a
    # statement, and one DuckDB could not roll back either is reopened first; neither stops the worker.
    assert out_of_memory(error) == reason
    assert checkpoint_out_of_memory(error) == (reason if invalidated else None)


def test_a_closed_or_invalidated_connection_is_told_from_a_failed_statement(tmp_path: Path) -> None:
    # A write past the memory limit reopens the state only when its connection can run nothing more; a closed one
    # (ConnectionException) raised out of the retry instead, stopping the worker.
    db = duckdb.connect(str(tmp_path / "x.duckdb"))
    db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
    with pytest.raises(duckdb.ConstraintException) as failed:
        db.execute("INSERT INTO t VALUES (1)")
    db.close()
    with pytest.raises(duckdb.Error) as closed:
        db.execute("SELECT 1")
    assert unusable(closed.value) and not unusable(failed.value)
    # DuckDB 2.0's two wordings of an invalidated database, raised by every statement after a failed checkpoint.
    assert unusable(
        duckdb.FatalException("FATAL Error: Failed: database has been invalidated because of a previous")
    )
    assert unusable(
        duckdb.InvalidInputException("Database x has been invalidated because checkpointing failed.")
    )
    state = StateStore(tmp_path / "worker.duckdb")
    state._db.close()  # as a reopen that could not finish leaves it
    assert state._usable() is False


def test_a_check_interrupted_under_it_is_not_taken_for_damage(tmp_path: Path) -> None:
    # A state reopened after a failed checkpoint interrupts the reads running on its cursors, the periodic
    # check among them; a check that called that damage would set a sound file aside and rebuild it.
    state = StateStore(_filled(tmp_path / "worker.duckdb", notes=3000))
    reader = state.reader()
    outcome: list[Exception | None] = []

    def check() -> None:
        try:
            for _ in range(200):  # until an interrupt lands
                reader.check()
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    checking = threading.Thread(target=check)
    checking.start()
    while checking.is_alive():
        reader._db.interrupt()
        checking.join(0.001)
    state.close()
    assert len(outcome) == 1 and isinstance(outcome[0], duckdb.InterruptException), outcome
