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
