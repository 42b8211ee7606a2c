"""Structured logs: the JSON formatter and the path and axis on every line about a document."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from mode.utils.logging import DEFAULT_COLOR_FORMAT, DEFAULT_COLORS

from processors.models import RawFile
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams.faust_text_log import FaustTextFormatter
from streams.logs import (
    CONTINUED,
    TEXT_FORMAT,
    JsonFormatter,
    TextFormatter,
    doc_context,
    faust_logging_config,
    stderr_lines_to,
)
from streams.pipeline import Pipeline
from streams.settings import KafkaSettings, Settings, load_settings
from tests.clocks import ManualClock
from tests.streams.pipeline_support import ingest

NOW = datetime(2026, 9, 27, 22, 30, tzinfo=ZoneInfo("Asia/Shanghai"))


def test_a_json_line_carries_the_extra_fields() -> None:
    record = logging.LogRecord("streams.pipeline", logging.INFO, __file__, 1, "stored %s", ("a.md",), None)
    for key, value in doc_context("inbox/a.md", "inference", Position("p.documents", 2, 7)).items():
        setattr(record, key, value)
    line = json.loads(JsonFormatter().format(record))
    assert (
        line["message"] == "stored a.md" and line["level"] == "INFO" and line["logger"] == "streams.pipeline"
    )
    assert (line["path"], line["axis"], line["partition"], line["offset"]) == (
        "inbox/a.md",
        "inference",
        2,
        7,
    )
    assert line["ts"].endswith("+00:00")


def test_an_exception_is_one_json_field() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in line["exc"]


def test_log_json_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREDIGEST_LOG_JSON", "true")
    settings = load_settings()
    assert settings.log_json is True
    config = faust_logging_config(log_json=True, level="INFO")
    assert config["formatters"]["default"]["()"] == "streams.logs.JsonFormatter"
    text = faust_logging_config(log_json=False, level="INFO")
    assert text["formatters"]["default"]["()"] == "streams.faust_text_log.FaustTextFormatter"
    # The worker's text lines have the CLI's format, and both modes write where the CLI does.
    assert text["formatters"]["default"]["format"] == TEXT_FORMAT
    assert (
        config["handlers"]["default"]["stream"] == text["handlers"]["default"]["stream"] == "ext://sys.stderr"
    )


FORGED = "inbox/jay/x\n[CRITICAL] forged.md"
SHOWN = "inbox/jay/x\\n[CRITICAL] forged.md"


def _record(msg: str, *args: object, exc: bool = False, path: str = FORGED) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError(f"cannot read {path}")
        except ValueError:
            exc_info = sys.exc_info()
    record = logging.LogRecord("streams.watcher", logging.WARNING, __file__, 1, msg, args, exc_info)
    for key, value in doc_context(path, "inference").items():
        setattr(record, key, value)
    return record


TEXT_FORMATTERS = {
    "cli": TextFormatter(),
    "worker": FaustTextFormatter(fmt=DEFAULT_COLOR_FORMAT, log_colors=DEFAULT_COLORS, stream=io.StringIO()),
}


@pytest.mark.parametrize("which", TEXT_FORMATTERS)
def test_a_path_or_text_cannot_forge_a_text_log_line(which: str) -> None:
    formatter = TEXT_FORMATTERS[which]
    hidden = FORGED + "\u202e\x1b[2J\r\u2028"
    line = formatter.format(_record("published %s (%d bytes); was %r", hidden, 12, hidden))
    assert "\n" not in line
    assert (
        f"published {SHOWN}\\u202e\\x1b[2J\\r\\u2028 (12 bytes); was '{SHOWN}\\u202e\\x1b[2J\\r\\u2028'"
        in line
    )
    # The record itself is not changed: the JSON handler next to it gets the raw path.
    record = _record("published %s", FORGED)
    formatter.format(record)
    assert record.getMessage() == f"published {FORGED}" and record.path == FORGED  # type: ignore[attr-defined]


@pytest.mark.parametrize("which", TEXT_FORMATTERS)
def test_a_traceback_and_a_table_follow_their_record_indented(which: str) -> None:
    formatter = TEXT_FORMATTERS[which]
    text = formatter.format(_record("reading %s failed", FORGED, exc=True))
    first, *rest = text.splitlines()
    assert f"reading {SHOWN} failed" in first
    assert rest and all(line.startswith(CONTINUED) for line in rest), text
    assert rest[-2:] == [
        f"{CONTINUED}ValueError: cannot read inbox/jay/x",
        f"{CONTINUED}[CRITICAL] forged.md",
    ]
    # Line breaks a log call writes itself (Faust's tables) are kept, indented.
    table = formatter.format(logging.LogRecord("faust", logging.INFO, "", 1, "t:\n| a |\r\n| b |", (), None))
    assert [line.rstrip() for line in table.splitlines()[1:]] == [f"{CONTINUED}| a |", f"{CONTINUED}| b |"]


def test_a_json_line_is_one_valid_object_with_the_raw_path() -> None:
    hidden = FORGED + "\u202e\u2028\x85\r"
    line = JsonFormatter().format(_record("published %s", hidden, exc=True, path=hidden))
    assert len(line.splitlines()) == 1  # splitlines breaks at U+2028 and NEL too: they are escaped
    parsed = json.loads(line)
    assert parsed["path"] == hidden and parsed["message"] == f"published {hidden}"
    assert f"cannot read {hidden}" in parsed["exc"]


def test_every_pipeline_line_about_a_document_names_its_path_and_axis(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Settings(root=tmp_path, state_dir=tmp_path / "state", out_dir=tmp_path / "out", kafka=KafkaSettings())
    pipeline = Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))
    good = b"# vLLM inference\n\nKV cache serving.\n"
    raws = [
        RawFile(
            path="inbox/a/2026-09-27-0900-x.md",
            content=good,
            size=len(good),
            mtime=0.0,
            sha256=hashlib.sha256(good).hexdigest(),
        ),
        RawFile(path="inbox/a/2026-09-27-0901-bin.md", content=b"\0\0bin", size=5, mtime=0.0, sha256="b"),
        RawFile(path="inbox/a/2026-09-27-0900-x.md", content=b"", size=0, mtime=0.0, sha256="", deleted=True),
    ]
    with caplog.at_level(logging.DEBUG, logger="streams"):
        for offset, raw in enumerate(raws):
            ingest(pipeline, raw, offset, Position("p.documents", 0, offset))
    # Routing's lines (streams.pipeline) and storing's (streams.store_report).
    about_documents = [r for r in caplog.records if r.name in ("streams.pipeline", "streams.store_report")]
    assert {r.getMessage().split(" ", 1)[0] for r in about_documents} >= {"stored", "rejected", "deleted"}
    for record in about_documents:
        assert getattr(record, "path", None) in {r.path for r in raws}, record.getMessage()
        if record.getMessage().startswith(("stored", "deleted")):
            assert getattr(record, "axis", None) in {a.name for a in s.axes}, record.getMessage()


def test_a_rejected_notes_warning_names_its_path_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Settings(root=tmp_path, state_dir=tmp_path / "state", out_dir=tmp_path / "out", kafka=KafkaSettings())
    pipeline = Pipeline(s, StateStore(s.state_file), Metrics(), clock=ManualClock(NOW))
    path = "inbox/a/2026-09-27-0901-bin.md"
    with caplog.at_level(logging.WARNING, logger="streams.pipeline"):
        ingest(pipeline, RawFile(path=path, content=b"\0\0bin", size=5, mtime=0.0, sha256="b"), 0)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "streams.pipeline"]
    # The stored reason starts with the path; the line says it once, then why.
    assert line == f"rejected {path} (binary): file contains NUL bytes; binary files are not notes"
    pipeline.state.close()


def test_the_lines_a_bar_takes_come_back_to_stderr_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The command's error line, logged after its bar ended by an exception (a signal's), is on stderr again.
    stderr, bar = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    handler, root = logging.StreamHandler(), logging.getLogger()
    root.addHandler(handler)
    try:
        with pytest.raises(KeyError), stderr_lines_to(bar):
            root.warning("refusing inbox/x.md")
            raise KeyError
        root.warning("interrupted")
    finally:
        root.removeHandler(handler)
    assert (bar.getvalue(), stderr.getvalue()) == ("refusing inbox/x.md\n", "interrupted\n")
