"""A state left with a WAL (a worker killed before its checkpoint) is replayed at the start within the worker's
DuckDB limits, raised up to the ceiling when it must be, else the start stops with one line that says what to do."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sinks import duck
from sinks.duck import Limits
from sinks.errors import StateLockedError, StateMemoryError
from sinks.state import STATE
from sinks.state_files import check_version, open_state
from tests.support import holding

PROJECT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 9, 28, 1, 2, 3, tzinfo=UTC)
MIB = 1024 * 1024

# A worker storing notes with its checkpoints held off, then killed: every note is in the WAL only.
_KILLED_MID_INGEST = """
import base64, os, random, sys
from pathlib import Path
from sinks.state import Position, StateStore
from tests.state_support import document_record, parsed

state = StateStore(Path(sys.argv[1]))
state._db.execute("SET checkpoint_threshold = '1TB'")
rng, note, offset = random.Random(7), parsed("inbox/jay/2026-09-27-1000-n.md", "# note\\nvLLM KV cache."), 0
for _ in range(int(sys.argv[2])):
    batch = []
    for _ in range(500):
        text = base64.b64encode(rng.randbytes(3_000)).decode()
        doc = note.model_copy(update={"path": f"inbox/jay/n{offset}.md", "text": text, "front_matter": {"x": text}})
        batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
        offset += 1
    state.apply_batch(batch)
print(offset, flush=True)
os._exit(0)  # as SIGKILL: no close, so no checkpoint
"""


# A worker running on the file (named as `predigest worker` names its claim): a note stored, so its WAL is there,
# and the file held.
_RUNNING = """
import sys, time
from pathlib import Path
from sinks import file_claim
from sinks.state import StateStore
from tests.state_support import parsed, put_document

file_claim.name_holder("worker")
state = StateStore(Path(sys.argv[1]))
put_document(state, "inference", parsed("inbox/jay/a.md", "# a\\n"), raw_offset=None)
print("open", flush=True)
time.sleep(60)
"""


def _killed_mid_ingest(path: Path, batches: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_INGEST, str(path), str(batches)],
        cwd=PROJECT,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _status_mib(field: str) -> int:
    found = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) // 1024


@pytest.mark.timeout(120)
def test_a_wal_left_by_a_killed_worker_replays_within_the_memory_limit_and_keeps_every_note(
    tmp_path: Path,
) -> None:
    path = tmp_path / "worker.duckdb"
    stored = _killed_mid_ingest(path, batches=32)
    wal_mib = _wal(path).stat().st_size // MIB
    assert wal_mib >= 100  # 16 000 notes of 4 KB of random text, stored twice (its text, its front matter)
    limits = Limits(memory_mib=16, threads=1, ceiling_mib=512)
    before = _status_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from the resident set now
    check_version(path, limits)  # the start's replay, before Faust
    grew = _status_mib("VmHWM") - before
    # Under DuckDB's default (80 % of the machine's RAM) the replay took ~1.8x the WAL (222 MiB for 123); ~58 here.
    assert grew < wal_mib * 2 // 3, f"the replay of a {wal_mib} MiB WAL took {grew} MiB within a 16 MiB limit"
    assert not _wal(path).exists()  # replayed and checkpointed: the worker's own open replays nothing
    state, aside = open_state(
        path, NOW, Limits(memory_mib=64, threads=1)
    )  # its check reads 2 048 notes at once
    try:
        assert aside is None and state.document_count() == stored
    finally:
        state.close()


def test_the_limits_are_in_force_as_the_file_opens(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    _killed_mid_ingest(path, batches=1)
    db = duck.connect(path, STATE, Limits(memory_mib=48, threads=1))
    try:
        row = db.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()
        assert row == ("48.0 MiB", 1)
        assert db.execute("SELECT count(*) FROM documents").fetchone() == (500,)
    finally:
        db.close()


@pytest.mark.timeout(120)
def test_a_wal_past_the_limit_is_replayed_with_more_memory_up_to_the_ceiling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "worker.duckdb"
    stored = _killed_mid_ingest(path, batches=4)
    with caplog.at_level(logging.INFO, logger="sinks.state_files"):
        check_version(path, Limits(memory_mib=2, threads=1, ceiling_mib=64))
    assert "replaying the WAL of the state file" in caplog.text
    assert "replaying it with 4 MiB. Raise duckdb.memory_limit_mib to at least that" in caplog.text
    assert not _wal(path).exists()
    state, _ = open_state(path, NOW, Limits(memory_mib=64, threads=1))
    try:
        assert state.document_count() == stored
    finally:
        state.close()


@pytest.mark.timeout(120)
def test_a_wal_that_does_not_replay_within_the_ceiling_stops_the_start_with_one_line_and_keeps_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "worker.duckdb"
    stored = _killed_mid_ingest(path, batches=4)
    wal_bytes = _wal(path).stat().st_size
    with pytest.raises(StateMemoryError) as refused:
        check_version(path, Limits(memory_mib=2, threads=1, ceiling_mib=4))
    line = str(refused.value)
    assert "\n" not in line
    assert re.match(r"the state file .*worker\.duckdb cannot replay its WAL within 4 MiB \(", line)
    assert "PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB" in line and "`predigest rebuild`" in line
    assert line.endswith("the file is not damaged")
    assert _wal(path).stat().st_size == wal_bytes  # kept as it was, never set aside as damaged
    check_version(path, Limits(memory_mib=64, threads=1, ceiling_mib=512))  # the next start, with more
    state, aside = open_state(path, NOW, Limits(memory_mib=64, threads=1))
    try:
        assert aside is None and state.document_count() == stored
    finally:
        state.close()


@pytest.mark.timeout(60)
def test_a_start_beside_a_running_worker_stops_on_its_lock_and_never_says_a_stop_left_its_wal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A running worker's file has a WAL too: the second start must not tell the operator a stop left it (it said
    "left by a stop that did not checkpoint"). The file's claim refuses the start, naming the worker, before the
    replay (until 2026-12-07 DuckDB's lock did, after a line saying it replays the WAL)."""
    path = tmp_path / "worker.duckdb"
    with subprocess.Popen(
        [sys.executable, "-c", _RUNNING, str(path)], cwd=PROJECT, stdout=subprocess.PIPE, text=True
    ) as running:
        try:
            assert running.stdout is not None and running.stdout.readline() == "open\n"
            assert _wal(path).exists()
            with (
                caplog.at_level(logging.INFO, logger="sinks.state_files"),
                pytest.raises(StateLockedError) as refused,
            ):
                check_version(path, Limits(memory_mib=64, threads=1, ceiling_mib=512))
        finally:
            running.kill()
    assert str(refused.value) == (
        f"cannot open the state file {path}: its lock file {path}.lock is held by `predigest worker` (PID "
        f"{running.pid}). {STATE.if_locked}"
    )
    assert "replaying" not in caplog.text and "stop" not in caplog.text, caplog.text


# A rebuild under way (named as `predigest rebuild` names its claim): the state's claim held, its file being replayed.
_REBUILDING = """
import sys
from pathlib import Path
from sinks import file_claim
from sinks.state import STATE

file_claim.name_holder("rebuild")
claim = file_claim.FileClaim(Path(sys.argv[1]), STATE)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_worker_started_during_a_rebuild_is_told_to_wait_for_the_rebuild_not_to_ask_a_worker(
    tmp_path: Path,
) -> None:
    # Before: "... held by `predigest rebuild` (PID n). Only the worker opens it; ask the worker over HTTP
    # (predigest status/flush) or stop the other process.": there was no worker to ask, and the rebuild was to be
    # waited for, not stopped half-way.
    path = tmp_path / "worker.duckdb"
    open_state(path, NOW)[0].close()
    with holding(_REBUILDING, str(path)) as rebuilding, pytest.raises(StateLockedError) as refused:
        check_version(path)
    assert str(refused.value) == (
        f"cannot open the state file {path}: its lock file {path}.lock is held by `predigest rebuild` (PID "
        f"{rebuilding.pid}). Only the worker or a rebuild opens it, one at a time: wait for a rebuild's end, or "
        "stop the other process; ask a running worker over HTTP (predigest status/flush)"
    )
