"""Real newsletter revisions through the real DuckDB sink: successive versions of one path supersede."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.documents import parse_document
from processors.models import RawFile, WindowBounds
from processors.window import window_bounds
from sinks.state import StateStore
from tests.state_support import put_document, superseded_summaries, window_documents

SH = ZoneInfo("Asia/Shanghai")
AXIS = "llm-application"
ZH = Path(__file__).resolve().parents[1] / "corpus" / "daily_digests" / "zh_hf_2404589803"
DAYS = ["2025-01-08", "2025-01-09", "2025-01-10", "2025-01-13", "2025-01-22"]
_STAMP = re.compile(r"@(\d{8}T\d{6})_")
EMPTY = hashlib.sha256(b"").hexdigest()


def versions(day: str, *, final: bool) -> list[bytes]:
    """The day's revisions in commit order, then (if asked) its final."""
    revisions = sorted(ZH.glob(f"revisions/{day}_daily_paper@*.md"), key=lambda p: _STAMP.findall(p.name)[0])
    tail = [ZH / "final" / f"{day}_daily_paper.md"] if final else []
    return [p.read_bytes() for p in [*revisions, *tail]]


def store_in_order(state: StateStore, day: str, *, final: bool) -> list[str]:
    """Put every version under one path, in order (raw offsets 0, 1, …); their sha256s."""
    shas = []
    for offset, data in enumerate(versions(day, final=final)):
        sha = hashlib.sha256(data).hexdigest()
        raw = RawFile(
            path=f"inbox/hf/{day}-daily-paper.md", content=data, size=len(data), mtime=0.0, sha256=sha
        )
        put_document(state, AXIS, parse_document(raw, zone=SH), raw_offset=offset)
        shas.append(sha)
    return shas


def window(day: str) -> WindowBounds:
    return window_bounds(datetime.fromisoformat(f"{day}T22:20:00+08:00"), timedelta(hours=24))


@pytest.fixture
def state(tmp_path: Path) -> StateStore:
    return StateStore(tmp_path / "worker.duckdb")


@pytest.mark.parametrize("day", DAYS)
def test_revisions_in_order_leave_only_the_last_one_current(state: StateStore, day: str) -> None:
    shas = store_in_order(state, day, final=False)
    assert len(shas) >= 2 and len(set(shas)) == len(shas)
    assert [d.sha256 for d in window_documents(state, AXIS, window(day))] == [shas[-1]]
    superseded = [d.sha256 for d in superseded_summaries(state, AXIS, window(day))]
    assert sorted(superseded) == sorted(shas[:-1])


@pytest.mark.parametrize("day", DAYS[1:])
def test_the_final_after_its_revisions_is_current(state: StateStore, day: str) -> None:
    # 2025-01-22 grew from 1 entry to 13: no near duplicate of its final, superseded all the same.
    shas = store_in_order(state, day, final=True)
    assert [d.sha256 for d in window_documents(state, AXIS, window(day))] == [shas[-1]]
    assert len(superseded_summaries(state, AXIS, window(day))) == len(set(shas)) - 1


def test_2025_01_08_was_emptied_then_restored() -> None:
    shas = [hashlib.sha256(v).hexdigest() for v in versions("2025-01-08", final=True)]
    assert shas[-2] == EMPTY and shas[-1] == shas[-3] != EMPTY


def test_a_version_restored_to_earlier_bytes_is_current_again(state: StateStore) -> None:
    # Versions are ordered by the raw record's offset, not by content: the restore is the newest.
    shas = store_in_order(state, "2025-01-08", final=True)
    assert [d.sha256 for d in window_documents(state, AXIS, window("2025-01-08"))] == [shas[-1]]
    superseded = sorted(d.sha256 for d in superseded_summaries(state, AXIS, window("2025-01-08")))
    assert superseded == sorted(set(shas) - {shas[-1]})


def test_replaying_the_whole_history_again_changes_nothing(state: StateStore) -> None:
    shas = store_in_order(state, "2025-01-08", final=True)
    store_in_order(state, "2025-01-08", final=True)  # a second owner's replay, same raw offsets
    assert [d.sha256 for d in window_documents(state, AXIS, window("2025-01-08"))] == [shas[-1]]
