"""Through the real watcher, Kafka and worker: a published note replaced by a symlink is briefed as rejected only,
and again as a source once the same bytes are back; a refused file deleted is no longer listed; `/status` counts a
refused file and its note page says why."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from processors.models import Briefing, RawFile
from processors.raw_record import read_raw
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.worker_process import stop_process
from tests.streams.fault_support import printed_logs_on_failure, spawn_watcher
from tests.support import read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
STAMP = (datetime.now(SH) - timedelta(hours=1)).strftime("%Y-%m-%d-%H%M")
NOTE = f"inbox/jay/{STAMP}-kv.md"
BLOB = f"inbox/jay/{STAMP}-blob.md"
TEXT = "# vLLM paged attention\n\nvLLM serves the KV cache in pages: 24x the throughput.\n"


async def _until(s: Settings, check: Callable[[list[RawFile]], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not check([read_raw(v) for _, v in await read_topic(s, "raw")]):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.5)


async def _flush(s: Settings, minutes: int) -> Briefing:
    await wait_ingested(s, 90)
    end = datetime.now(UTC) + timedelta(minutes=minutes)  # each flush a window end of its own
    await send_command(s, "inference", "flush", end)
    return await await_briefing(s, "inference", end, "flush", 90)


async def _seen_by_operator(s: Settings) -> tuple[dict[str, Any], str]:
    """What an operator reads of the inference axis's refused files: `/status`'s count and the binary's page."""
    async with httpx.AsyncClient(timeout=10) as http:
        body = (await http.get(worker_url(s, "/status"))).json()
        page = await http.get(worker_url(s, "/browse/note"), params={"path": BLOB})
        assert page.status_code == 200, page.text  # refused, never stored: not "not found"
    refused: dict[str, Any] = next(a["refused"] for a in body["axes"] if a["axis"] == "inference")
    return refused, page.text


async def _run(s: Settings, workdir: Path) -> tuple[list[Briefing], tuple[dict[str, Any], str]]:
    await kafka_io.ensure_topics(s)
    (s.root / NOTE).parent.mkdir(parents=True)
    (s.root / NOTE).write_bytes(TEXT.encode())
    (s.root / BLOB).write_bytes(b"# vLLM\x00\x01 binary\n")
    (workdir / "outside.md").write_bytes(b"# an outside file\n")
    logs = (workdir / "watcher.log", workdir / "worker.log")
    briefings = []
    with running_worker(s, workdir), printed_logs_on_failure(*logs):
        watcher = spawn_watcher(s, workdir)
        try:
            await _until(s, lambda r: {NOTE, BLOB} <= {x.path for x in r}, "both files")
            briefings.append(await _flush(s, 1))
            seen = await _seen_by_operator(s)
            link = s.root / f"{NOTE}.tmp"
            os.symlink(workdir / "outside.md", link)
            os.replace(link, s.root / NOTE)  # the note replaced by a link at once, as a writer's rename does
            (s.root / BLOB).unlink()
            await _until(
                s,
                lambda r: (
                    any(x.path == NOTE and x.refused for x in r)
                    and any(x.path == BLOB and x.deleted for x in r)
                ),
                "the refusal and the deletion",
            )
            briefings.append(await _flush(s, 2))
            (s.root / NOTE).unlink()
            (s.root / NOTE).write_bytes(TEXT.encode())  # back with the same bytes
            await _until(
                s, lambda r: [x.content for x in r if x.path == NOTE][-1:] == [TEXT.encode()], "it back"
            )
            briefings.append(await _flush(s, 3))
        finally:
            stop_process(watcher)
    return briefings, seen


def test_a_note_replaced_by_a_symlink_is_rejected_only_until_it_is_back_and_a_deleted_refusal_is_gone(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(quiet_seconds=0.5)
    (before, refused, back), (status, page) = asyncio.run(_run(s, tmp_path))

    def listed(b: Briefing) -> tuple[list[str], list[tuple[str, str | None]]]:
        return [x.path for x in b.sources], [(r.path, r.reason_code) for r in b.rejected]

    assert listed(before) == ([NOTE], [(BLOB, "binary")])
    assert listed(refused) == ([], [(NOTE, "symlink")])  # not its old text; the deleted blob nowhere
    assert refused.increments == [] and "24x" not in refused.model_dump_json()
    assert listed(back) == ([NOTE], [])
    # Before the note's refusal: the binary, refused at the door and never stored, is what status and its page show.
    assert status["count"] == 1 and (status["newest"]["path"], status["newest"]["reason_code"]) == (
        BLOB,
        "binary",
    )
    assert s.lang == "zh" and "二进制文件（含 NUL 字节）" in page  # the page in the configured language
