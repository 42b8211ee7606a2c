"""Structured logs: the JSON formatter and the path and axis on every line about a document."""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.models import RawFile
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams.logs import JsonFormatter, doc_context, faust_logging_config
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
    assert config is not None and config["formatters"]["json"]["()"] == "streams.logs.JsonFormatter"
    assert faust_logging_config(log_json=False, level="INFO") is None


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
    with caplog.at_level(logging.DEBUG, logger="streams.pipeline"):
        for offset, raw in enumerate(raws):
            ingest(pipeline, raw, offset, Position("p.documents", 0, offset))
    about_documents = [r for r in caplog.records if r.name == "streams.pipeline"]
    assert {r.getMessage().split(" ", 1)[0] for r in about_documents} >= {"stored", "rejected", "deleted"}
    for record in about_documents:
        assert getattr(record, "path", None) in {r.path for r in raws}, record.getMessage()
        if record.getMessage().startswith(("stored", "deleted")):
            assert getattr(record, "axis", None) == "inference"
