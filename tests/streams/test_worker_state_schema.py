"""`predigest worker` on a state file of an older schema stops at once with one line naming the rebuild."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb

from streams.settings import KafkaSettings, Settings
from streams.worker_process import PROJECT, dump_settings


def test_the_worker_refuses_an_older_state_with_one_line(tmp_path: Path) -> None:
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),  # never reached: the check comes first
    )
    s.state_dir.mkdir(parents=True)
    db = duckdb.connect(str(s.state_file))
    db.execute("CREATE TABLE documents (axis VARCHAR, path VARCHAR, doc_json VARCHAR)")
    db.close()
    cfg = dump_settings(s, tmp_path / "settings.json")
    result = subprocess.run(
        [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), "worker"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "`predigest rebuild`" in result.stderr and "Traceback" not in result.stderr
    # Nothing set aside, nothing rebuilt behind its back (its claim's lock file stays, as it always does).
    assert sorted(p.name for p in s.state_dir.iterdir()) == ["worker.duckdb", "worker.duckdb.lock"]
