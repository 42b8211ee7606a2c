"""Briefing files are written whole, next to each other, and leave no temp files behind."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.models import AxisSpec, Briefing
from processors.window import window_bounds
from sinks.files import BriefingFiles

SH = ZoneInfo("Asia/Shanghai")


def empty_briefing() -> Briefing:
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    return assemble_briefing(
        BriefingRequest(
            axis=AxisSpec(name="inference"),
            trigger="close",
            window=window_bounds(end, timedelta(hours=24)),
            generated_at=end,
            zone=SH,
            documents=[],
        )
    )


def test_both_files_are_written_and_no_temp_file_remains(tmp_path: Path) -> None:
    b = empty_briefing()
    files = BriefingFiles(tmp_path)
    md, js = files.paths("inference", "2026-09-27-inference-e1prep")
    written = files.ensure("inference", md.stem, b.model_dump_json(by_alias=True), "# md\n")
    assert written == [js, md]
    assert md.read_text() == "# md\n"
    assert Briefing.model_validate_json(js.read_text()) == b
    assert sorted(p.name for p in (tmp_path / "inference").iterdir()) == sorted([md.name, js.name])
