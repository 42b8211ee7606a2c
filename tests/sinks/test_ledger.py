"""The watcher's ledger remembers what Kafka acknowledged, across reopenings."""

from __future__ import annotations

from pathlib import Path

from sinks.ledger import Ledger


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
