"""The worker's briefing step counts exact and near duplicates apart (no broker needed)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from processors.documents import parse_document
from processors.fan_out import DocumentEvent
from processors.models import ControlCommand, RawFile
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.pipeline import Pipeline
from streams.settings import Settings, load_settings
from tests.clocks import ManualClock
from tests.processors.near_dup_samples import EN_NOTE, EN_NOTE_EDITED
from tests.streams.pipeline_support import store_event

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def _event(path: str, text: str) -> DocumentEvent:
    data = text.encode()
    sha = hashlib.sha256(data).hexdigest()
    doc = parse_document(RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=sha), zone=SH)
    return DocumentEvent(type="document", path=path, sha256=sha, seen_at=END, axis="inference", document=doc)


async def _brief(tmp_path: Path, threshold: float) -> Metrics:
    settings = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        near_duplicate_threshold=threshold,
    )
    metrics = Metrics()
    state = StateStore(tmp_path / "state" / f"{threshold}.duckdb")
    pipeline = Pipeline(settings, state, metrics, ManualClock(END))
    store_event(pipeline, _event("inbox/jay/2026-09-27-1000-kv.md", EN_NOTE))
    store_event(pipeline, _event("inbox/tom/2026-09-27-1100-kv-edited.md", EN_NOTE_EDITED))
    store_event(pipeline, _event("inbox/tom/2026-09-27-1200-kv-copy.md", EN_NOTE))
    command = ControlCommand(
        axis="inference", trigger="flush", end=END, requested_at=datetime.now(UTC), request_id="r1"
    )
    assert await pipeline.brief(command) is not None
    state.close()
    return metrics


def _count(metrics: Metrics, kind: str) -> float | None:
    return metrics.registry.get_sample_value(
        "predigest_duplicates_total", {"axis": "inference", "kind": kind}
    )


async def test_duplicates_are_counted_by_kind(tmp_path: Path) -> None:
    metrics = await _brief(tmp_path, 0.8)
    assert (_count(metrics, "exact"), _count(metrics, "near")) == (1.0, 1.0)


async def test_a_strict_threshold_from_settings_counts_no_near_duplicate(tmp_path: Path) -> None:
    metrics = await _brief(tmp_path, 0.99)
    assert (_count(metrics, "exact"), _count(metrics, "near")) == (1.0, None)


def test_the_threshold_is_validated_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREDIGEST_NEAR_DUPLICATE_THRESHOLD", "0.9")
    assert load_settings().near_duplicate_threshold == 0.9
    for bad in (0.0, 1.5):
        with pytest.raises(ValidationError):
            Settings(near_duplicate_threshold=bad)
