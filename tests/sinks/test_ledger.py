"""The watcher's ledger remembers what Kafka acknowledged, across reopenings."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import duckdb
import pytest

from sinks.errors import LedgerWriteError
from sinks.ledger import FLUSH_SECONDS, RETRY_MAX_SECONDS, Ledger


def test_the_ledger_survives_a_restart(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge("inbox/jay/a.md", 10, 1.5, "abc")
    ledger.close()
    again = Ledger(tmp_path / "ledger.duckdb")
    assert again.get("inbox/jay/a.md") == (10, 1.5, "abc")
    again.forget("inbox/jay/a.md")
    assert again.paths() == set()


def test_many_acknowledgements_in_one_statement_replace_older_ones(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge("inbox/jay/a.md", 10, 1.5, "old")
    ledger.acknowledge_many(
        [("inbox/jay/a.md", 11, 2.5, "new"), ("paper_cards/1-2501-00001.md", 7, 3.0, "c")]
    )
    ledger.acknowledge_many([])
    assert ledger.entries() == {
        "inbox/jay/a.md": (11, 2.5, "new"),
        "paper_cards/1-2501-00001.md": (7, 3.0, "c"),
    }


def test_acknowledgements_are_written_in_batches_and_none_is_lost_at_close(tmp_path: Path) -> None:
    # A row at a time cost 18 ms in DuckDB (30 minutes for a first start over 100,000 files).
    now = [0.0]
    ledger = Ledger(tmp_path / "ledger.duckdb", clock=lambda: now[0])
    writes: list[int] = []
    real = ledger.flush

    def counted() -> None:
        writes.append(len(ledger._unwritten))
        real()

    ledger.flush = counted  # type: ignore[method-assign]
    for i in range(5):
        ledger.acknowledge(f"inbox/jay/{i}.md", i, 1.0, "x")
    assert writes == [] and ledger.get("inbox/jay/4.md") == (4, 1.0, "x")  # read from memory, not yet written
    now[0] += 1.5
    ledger.acknowledge("inbox/jay/5.md", 5, 1.0, "x")
    assert writes == []  # an acknowledgement never writes: its caller's flush_if_due does
    ledger.flush_if_due()  # the oldest has waited a second: all six go
    ledger.forget("inbox/jay/0.md")
    ledger.close()
    assert writes[0] == 6
    again = Ledger(tmp_path / "ledger.duckdb")
    assert again.paths() == {f"inbox/jay/{i}.md" for i in range(1, 6)}
    assert again.stats()["inbox/jay/5.md"] == (5, 1.0)


def test_the_ledger_knows_which_folders_hold_acknowledged_files(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge("inbox/jay/sub/a.md", 1, 1.0, "x")
    assert (
        ledger.has_folder("inbox/jay") and ledger.has_folder("inbox/jay/sub") and ledger.has_folder("inbox")
    )
    assert not ledger.has_folder("inbox/ja") and not ledger.has_folder("inbox/jay/sub/a.md")
    ledger.forget("inbox/jay/sub/a.md")
    assert not ledger.has_folder("inbox/jay")
    ledger.close()


def test_a_backfill_s_acknowledgements_read_back_as_given_after_a_reopen(tmp_path: Path) -> None:
    # Written as one Arrow batch: every value as it was acknowledged, a second run replacing the first's rows.
    rows = [
        ('inbox/jay/推理 "quoted" back\\slash.md', 2**62, 1733456789.123456789, "a" * 64),
        ("inbox/tom/a.md", 0, -1.5, ""),
        ("living/x.md", 7, 1e-300, "refused-symlink"),
        ("paper_cards/1.md", 1, 1733456789.0, "size-5000000"),
    ]
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge_many(rows)
    ledger.acknowledge_many([(p, s + 1, m, f"{h}!") for p, s, m, h in rows[:2]])
    ledger.close()
    again = Ledger(tmp_path / "ledger.duckdb")
    assert again.entries() == {
        **{p: (s, m, h) for p, s, m, h in rows},
        **{p: (s + 1, m, f"{h}!") for p, s, m, h in rows[:2]},
    }
    assert again.has_folder("inbox/jay") and again.has_folder("living") and not again.has_folder("work-queue")


def test_a_path_acknowledged_twice_in_one_batch_counts_its_folders_once(tmp_path: Path) -> None:
    # acknowledge_many counts the folders of its new paths: a path twice in the batch is still one path, so once it
    # is forgotten its folder holds nothing (acknowledge twice, then forget, says the same).
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "x"), ("inbox/jay/a.md", 2, 2.0, "y")])
    assert ledger.get("inbox/jay/a.md") == (2, 2.0, "y")
    ledger.forget("inbox/jay/a.md")
    assert not ledger.has_folder("inbox/jay") and not ledger.has_folder("inbox")
    ledger.close()


def _stored(db: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return [
        (str(p), str(h)) for p, h in db.execute("SELECT path, sha256 FROM ledger ORDER BY path").fetchall()
    ]


def test_a_flush_duckdb_refuses_keeps_its_rows_for_the_next_one(tmp_path: Path) -> None:
    # Before: the batch was dropped before its statements ran, and the forget's DELETE stood without the INSERT.
    now = [0.0]
    ledger = Ledger(tmp_path / "ledger.duckdb", clock=lambda: now[0])
    ledger.acknowledge_many([("inbox/jay/a.md", 1, 1.0, "1"), ("inbox/jay/b.md", 2, 2.0, "2")])
    other = duckdb.connect(str(tmp_path / "ledger.duckdb"))  # the same database, as another user of the file
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")  # the INSERT of a hex digest now fails
    ledger.forget("inbox/jay/a.md")
    ledger.acknowledge("inbox/jay/c.md", 3, 3.0, "c0ffee")
    now[0] += FLUSH_SECONDS
    with pytest.raises(
        LedgerWriteError, match=r"cannot write 2 acknowledgement\(s\) to the watcher ledger .*Conversion"
    ):
        ledger.flush_if_due()
    assert _stored(other) == [("inbox/jay/a.md", "1"), ("inbox/jay/b.md", "2")]  # one transaction: no DELETE
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
    ledger.flush_if_due()  # a refused flush waits FLUSH_SECONDS before the next try
    assert _stored(other) == [("inbox/jay/a.md", "1"), ("inbox/jay/b.md", "2")]
    now[0] += FLUSH_SECONDS
    ledger.flush_if_due()
    assert _stored(other) == [("inbox/jay/b.md", "2"), ("inbox/jay/c.md", "c0ffee")]
    other.close()
    ledger.close()
    assert Ledger(tmp_path / "ledger.duckdb").entries() == {
        "inbox/jay/b.md": (2, 2.0, "2"),
        "inbox/jay/c.md": (3, 3.0, "c0ffee"),
    }


def test_a_refusal_that_lasts_an_hour_is_retried_and_said_about_once_a_minute(tmp_path: Path) -> None:
    # Before: retried, and its error logged by the watcher, every second (3 600 lines for a full disk's hour).
    now = [0.0]
    ledger = Ledger(tmp_path / "ledger.duckdb", clock=lambda: now[0])
    other = duckdb.connect(str(tmp_path / "ledger.duckdb"))
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")
    ledger.acknowledge("inbox/jay/a.md", 1, 1.0, "c0ffee")
    refused: list[float] = []
    while now[0] < 3600:  # the watcher's pass, every tenth of a second
        now[0] += 0.1
        try:
            ledger.flush_if_due()
        except LedgerWriteError:
            refused.append(now[0])
    assert len(refused) < 3600 / RETRY_MAX_SECONDS + 10  # 1, 2, 4 … seconds apart, then a minute
    assert max(b - a for a, b in pairwise(refused)) <= RETRY_MAX_SECONDS + 0.2
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
    now[0] = refused[-1] + RETRY_MAX_SECONDS
    ledger.flush_if_due()  # written at the next try once the cause is gone
    assert _stored(other) == [("inbox/jay/a.md", "c0ffee")]
    ledger.acknowledge("inbox/jay/b.md", 2, 2.0, "b")
    other.execute("DROP TABLE ledger")  # refused again
    now[0] += FLUSH_SECONDS
    with pytest.raises(LedgerWriteError):
        ledger.flush_if_due()
    other.execute("CREATE TABLE ledger (path VARCHAR PRIMARY KEY, size BIGINT, mtime DOUBLE, sha256 VARCHAR)")
    now[0] += FLUSH_SECONDS  # a success started the delays over: a second again
    ledger.flush_if_due()
    assert _stored(other) == [("inbox/jay/b.md", "b")]
    other.close()
    ledger.close()


def test_a_stop_whose_last_write_is_refused_says_the_next_start_sends_those_files_again(
    tmp_path: Path,
) -> None:
    # Before: the stop's error said the rows were "kept for the next flush", which never comes after a stop.
    ledger = Ledger(tmp_path / "ledger.duckdb")
    ledger.acknowledge("inbox/jay/a.md", 1, 1.0, "10")
    ledger.close()
    ledger = Ledger(tmp_path / "ledger.duckdb")
    other = duckdb.connect(str(tmp_path / "ledger.duckdb"))
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")  # the INSERT of a hex digest now fails
    ledger.acknowledge("inbox/jay/b.md", 2, 2.0, "c0ffee")
    ledger.forget("inbox/jay/a.md")
    with pytest.raises(LedgerWriteError) as refused:
        ledger.close()
    said = str(refused.value)
    assert said.startswith("cannot write 2 acknowledgement(s) to the watcher ledger") and "Conversion" in said
    assert "not written at this stop: the next start" in said and "sends those files again" in said
    assert "next flush" not in said and "\n" not in said
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
    other.close()
    assert Ledger(tmp_path / "ledger.duckdb").entries() == {
        "inbox/jay/a.md": (1, 1.0, "10")
    }  # closed as it was
