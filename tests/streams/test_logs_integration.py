"""A file name cannot forge a log record: a real watcher and worker, text and JSON logs, one record per line."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from streams import kafka_io
from streams.logs import CONTINUED
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.worker_process import stop_process
from tests.streams.fault_support import printed_logs_on_failure, spawn_watcher
from tests.support import running_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FORGED = "inbox/jay/x\n[CRITICAL] forged.md"
SHOWN = "inbox/jay/x\\n[CRITICAL] forged.md"
PLAIN = "inbox/jay/2026-09-27-1000-plain.md"
LEVEL = r"(DEBUG|INFO|WARNING|ERROR|CRITICAL)"
RECORD = {
    "watcher.log": re.compile(
        rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} {LEVEL} "
    ),  # streams.logs.TEXT_FORMAT
    "worker.log": re.compile(rf"\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}}\] \[\d+\] \[{LEVEL}\] "),  # mode's
}
BANNER = ("┌", "│", "├", "└")  # Faust's start-up table, printed before logging starts


def _run(settings: Settings, workdir: Path) -> dict[str, list[str]]:
    """Watcher and worker over a root holding the forged name; each log's lines once both have handled it."""
    asyncio.run(kafka_io.ensure_topics(settings))
    for rel in (FORGED, PLAIN):
        path = settings.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# vLLM 推理 serving\n\nKV cache hit rate 92.2%.\n", encoding="utf-8")
    logs = {name: workdir / name for name in RECORD}
    with running_worker(settings, workdir), printed_logs_on_failure(*logs.values()):
        watcher = spawn_watcher(settings, workdir)
        try:
            asyncio.run(wait_ingested(settings, 90))

            def both_logged() -> bool:
                text = {n: p.read_text(encoding="utf-8") if p.exists() else "" for n, p in logs.items()}
                return all("forged.md" in t for t in text.values())

            wait_for(both_logged, 60, "the forged name in both logs")
        finally:
            stop_process(watcher)
    # Split where a reader's tool would: at \n, \r, U+2028, NEL and the rest.
    return {n: p.read_text(encoding="utf-8").splitlines() for n, p in logs.items()}


@pytest.mark.timeout(240)
def test_a_file_name_with_a_newline_cannot_forge_a_text_log_line(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    lines = _run(make_settings(log_json=False), tmp_path)
    for name, log in lines.items():
        assert not [line for line in log if line.startswith("[CRITICAL] forged")], f"{name} has a forged line"
        assert any(SHOWN in line for line in log), f"{name} names the file, escaped"
        strays = [
            line
            for line in log
            if line and not RECORD[name].match(line) and not line.startswith((CONTINUED, *BANNER))
        ]
        assert strays == [], f"{name}: lines that are no record and continue none"


@pytest.mark.timeout(240)
def test_json_logs_stay_one_valid_object_per_line(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    lines = _run(make_settings(log_json=True), tmp_path)
    for name, log in lines.items():
        records = [json.loads(line) for line in log if line and not line.startswith(BANNER)]
        assert any(r.get("path") == FORGED for r in records), f"{name} carries the raw name as a field"
        assert any(FORGED in r["message"] for r in records), name
