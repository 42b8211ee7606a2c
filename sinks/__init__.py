"""What predigest writes: DuckDB state, the watcher's ledger, briefing files, metrics."""
