"""The emissions table: recorded once, read back byte for byte, delivery noted, older files migrated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.models import AxisSpec, Briefing
from processors.window import window_bounds
from sinks.state import StateStore

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def briefing(generated_at: datetime = END) -> Briefing:
    return assemble_briefing(
        BriefingRequest(
            axis=AxisSpec(name="inference"),
            trigger="close",
            window=window_bounds(END, timedelta(hours=24)),
            generated_at=generated_at,
            zone=SH,
            documents=[],
        )
    )


def test_an_emission_is_recorded_once_and_read_back_as_recorded(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    first = briefing()
    assert state.record_emission(first, "base", "# md\n", emitted_at=END) is True
    assert state.record_emission(briefing(END + timedelta(hours=1)), "base", "# other\n") is False
    record = state.emission_record("inference", END, "close")
    assert record is not None
    assert record.briefing_json == first.model_dump_json(by_alias=True)
    assert (record.basename, record.markdown, record.delivered) == ("base", "# md\n", False)
    state.mark_delivered("inference", END, "close", END + timedelta(minutes=1))
    state.mark_delivered("inference", END, "close", END + timedelta(minutes=9))  # the first time stays
    record = state.emission_record("inference", END, "close")
    assert record is not None and record.delivered_at == END + timedelta(minutes=1)
    assert state.emission_record("inference", END, "flush") is None
    state.close()


def test_a_state_file_from_before_the_markdown_column_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "worker.duckdb"
    db = duckdb.connect(str(path))
    db.execute(
        "CREATE TABLE emissions (axis VARCHAR NOT NULL, window_end TIMESTAMPTZ NOT NULL, trigger VARCHAR NOT NULL,"
        " basename VARCHAR NOT NULL, emitted_at TIMESTAMPTZ NOT NULL, briefing_json VARCHAR NOT NULL,"
        " PRIMARY KEY (axis, window_end, trigger))"
    )
    db.execute(
        "INSERT INTO emissions VALUES (?, ?, ?, ?, ?, ?)",
        ["inference", END, "close", "base", datetime.now(UTC), briefing().model_dump_json(by_alias=True)],
    )
    db.close()
    state = StateStore(path)
    record = state.emission_record("inference", END, "close")
    # Emitted by the earlier code, which sent it right after recording: counted as delivered.
    assert record is not None and record.markdown is None and record.delivered
    state.close()
