"""The ledger's reopen after a refusal that invalidated DuckDB's database: its rows written once, its file held."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from sinks.errors import LedgerWriteError
from sinks.file_claim import lock_path
from sinks.ledger import FLUSH_SECONDS, Ledger
from tests.ledger_support import checkpoint_at_every_commit, full_disk, invalidated
from tests.support import holding

PROJECT = Path(__file__).resolve().parents[2]
ROWS = [(f"inbox/tom/{i}.md", i, float(i), f"{i:064x}") for i in range(3000)]


def _stored_now(path: Path) -> list[tuple[str, str]]:
    """What the ledger's file holds, read through the process's open database (a second connection to it)."""
    with duckdb.connect(str(path)) as db:
        return [
            (str(p), str(h))
            for p, h in db.execute("SELECT path, sha256 FROM ledger ORDER BY path").fetchall()
        ]


def test_a_write_that_invalidates_the_database_is_written_once_the_disk_has_room_without_a_restart(
    tmp_path: Path,
) -> None:
    # Before: DuckDB invalidates the database whose checkpoint failed, and every later flush was refused with
    # "database has been invalidated" until the watcher restarted (which sent those files again).
    path = tmp_path / "ledger.duckdb"
    now = [0.0]
    ledger = invalidated(path, lambda: now[0], ROWS)
    with full_disk(path):
        now[0] += FLUSH_SECONDS
        with pytest.raises(LedgerWriteError, match=r"cannot write 3000 .*File too large"):  # still full: kept
            ledger.flush_if_due()
    now[0] += 2 * FLUSH_SECONDS
    ledger.flush_if_due()  # room again: written by the same ledger
    assert len(_stored_now(path)) == 3001
    ledger.close()
    assert Ledger(path).entries() == {
        "inbox/jay/a.md": (1, 1.0, "a"),
        **{p: (s, m, h) for p, s, m, h in ROWS},
    }


# Another process holding the ledger's file until its stdin closes.
_HOLDER = "import duckdb, sys; db = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.read()"


def test_rows_whose_reopen_another_process_locked_are_kept_and_written_by_the_stop_once_it_let_go(
    tmp_path: Path,
) -> None:
    # The connection a refusal invalidated is closed, so DuckDB's lock is free until the next flush opens it again:
    # a process other than predigest's that takes it meanwhile refuses that flush, never its rows.
    path = tmp_path / "ledger.duckdb"
    now = [0.0]
    ledger = invalidated(path, lambda: now[0], ROWS)
    with holding(_HOLDER, str(path)):  # it lets go at the block's end
        now[0] += FLUSH_SECONDS
        with pytest.raises(LedgerWriteError, match=r"cannot write 3000 .*One watcher or backfill at a time"):
            ledger.flush_if_due()
    ledger.forget("inbox/jay/a.md")
    ledger.close()  # its one try opens the file again, free now
    assert Ledger(path).entries() == {p: (s, m, h) for p, s, m, h in ROWS}


# A second watcher or backfill: the ledger's open of a process that starts on the same file.
_SECOND = (
    "import sys; from pathlib import Path; from sinks.errors import StateLockedError; from sinks.ledger import Ledger\n"
    "try:\n    Ledger(Path(sys.argv[1])).close()\nexcept StateLockedError as exc:\n    print(exc); sys.exit(3)\n"
)


def _second(path: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _SECOND, str(path)]
    return subprocess.run(argv, cwd=PROJECT, capture_output=True, text=True, timeout=60, check=False)


def test_no_second_process_opens_the_ledger_while_its_connection_waits_to_be_opened_again(
    tmp_path: Path,
) -> None:
    # Before: DuckDB's lock went with the closed connection, and a second watcher or a backfill started on the
    # file in that gap (1-60 s): both sent the same files.
    path = tmp_path / "ledger.duckdb"
    now = [0.0]
    ledger = invalidated(path, lambda: now[0], ROWS[:10])
    second = _second(path)
    assert second.returncode == 3, second.stderr
    said = second.stdout.strip()
    assert said == (
        f"cannot open the watcher ledger {path}: its lock file {path}.lock is held by another process "
        f"(PID {os.getpid()}). One watcher or backfill at a time runs on a root: wait for its end, or stop it"
    )
    now[0] += FLUSH_SECONDS
    ledger.flush_if_due()  # the disk has room again: written, still held
    assert _second(path).returncode == 3
    ledger.close()
    second = _second(path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(Ledger(path).entries()) == 11


def test_the_first_start_on_a_full_disk_opens_the_ledger_and_its_lock_names_no_pid(tmp_path: Path) -> None:
    # The first start of this release on a full disk makes the lock file, which cannot take its PID line. Before:
    # the start ended in a traceback (OSError: No space left on device), again at every restart while the disk
    # stayed full, where the ledger opened and the watcher published (its writes refused, then written).
    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(path)
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "a")])
    ledger.close()
    lock_path(path).unlink()  # a ledger of the release before
    with full_disk(path, size=0):
        ledger = Ledger(path)
    assert ledger.entries() == {"inbox/jay/a.md": (1, 1.0, "a")}
    second = _second(path)
    assert second.returncode == 3, second.stderr
    assert second.stdout.strip() == (
        f"cannot open the watcher ledger {path}: its lock file {path}.lock is held by another process. One watcher "
        "or backfill at a time runs on a root: wait for its end, or stop it"
    )
    ledger.close()


def test_the_lock_file_may_be_written_by_whoever_may_write_the_ledger(tmp_path: Path) -> None:
    # A state folder shared by a group (umask 002): the ledger is group-writable, and its lock file was not (0644),
    # so a backfill run by another user of the group was refused ("cannot use the lock file … Permission denied").
    path = tmp_path / "ledger.duckdb"
    umask = os.umask(0o002)
    try:
        Ledger(path).close()
    finally:
        os.umask(umask)
    assert lock_path(path).stat().st_mode & 0o777 == path.stat().st_mode & 0o777 == 0o664


def test_a_commit_duckdb_calls_durable_is_written_and_the_stop_counts_only_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # DuckDB wrote the commit to the WAL, then its checkpoint failed. Before: refused ("cannot write 10"), kept,
    # written again, and counted among the rows a stop's line said were not written.
    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(path)
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "a")])
    checkpoint_at_every_commit(path, wal_first=True)
    with full_disk(path), caplog.at_level(logging.WARNING):
        ledger.acknowledge_many(ROWS[:10])
    assert "holds 10 acknowledgement(s) in its WAL but could not checkpoint them into the file" in caplog.text
    assert "File too large" in caplog.text and "Reopen the database" not in caplog.text
    ledger.acknowledge("inbox/jay/b.md", 2, 2.0, "b")
    with holding(_HOLDER, str(path)), pytest.raises(LedgerWriteError) as refused:
        ledger.close()  # its reopen refused by the holder's lock
    assert str(refused.value).startswith("cannot write 1 acknowledgement(s) to the watcher ledger")
    assert Ledger(path).entries() == {
        "inbox/jay/a.md": (1, 1.0, "a"),
        **{p: (s, m, h) for p, s, m, h in ROWS[:10]},
    }


def test_a_stop_whose_last_commit_duckdb_calls_durable_ends_without_an_error(tmp_path: Path) -> None:
    # Before: the stop said "cannot write 1 acknowledgement(s) … not written at this stop" of a row in the WAL.
    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(path)
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "a")])
    checkpoint_at_every_commit(path, wal_first=True)
    ledger.acknowledge("inbox/jay/b.md", 2, 2.0, "b")
    with full_disk(path):
        ledger.close()
    assert Ledger(path).entries() == {"inbox/jay/a.md": (1, 1.0, "a"), "inbox/jay/b.md": (2, 2.0, "b")}
