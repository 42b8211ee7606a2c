"""The suite's own reports: a test that ran past its timeout says so, whatever DuckDB made of the signal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT

STUCK = """
import duckdb
import pytest


@pytest.mark.timeout(1)
def test_stuck() -> None:
    db = duckdb.connect(config={"threads": 1})  # the tests' states: a query checks for signals between its tasks
    db.execute("SELECT sum(i * i) FROM range(100000000000) t(i)").fetchall()
"""


def test_a_timeout_that_lands_in_a_duckdb_query_is_reported_as_a_timeout(tmp_path: Path) -> None:
    """DuckDB turns pytest-timeout's exception into "Query interrupted", as if the state had interrupted a read:
    on a loaded machine four tests failed so and passed alone."""
    stuck = tmp_path / "test_stuck.py"
    stuck.write_text(STUCK)
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rf",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            str(stuck),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "RuntimeError: Query interrupted" in ran.stdout, ran.stdout
    assert "FAILED" in ran.stdout and "Timeout (>1.0s) from pytest-timeout, not the state" in ran.stdout, (
        ran.stdout
    )
