"""Writers that write while the watcher runs: only complete versions reach the briefing, a later edit supersedes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.models import RawFile
from processors.raw_record import MAGIC, read_raw
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.streams.fault_support import metric, watcher_metrics
from tests.support import async_wait_for, read_topic, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

END = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))
CHUNKED = "inbox/jay/2026-09-27-1000-chunked.md"
RENAMED = "inbox/tom/2026-09-27-1100-renamed.md"
EDITED = "inbox/spark/2026-09-27-1200-edited.md"
DELETED = "inbox/jay/2026-09-27-1300-deleted.md"
CHUNKS = [f"## part {i}\nvLLM 推理 serving, chunk {i}: KV cache hit {90 + i}%.\n" for i in range(5)]


async def raw_versions(s: Settings) -> dict[str, list[RawFile]]:
    found: dict[str, list[RawFile]] = {}
    for _, value in await read_topic(s, "raw"):
        assert value.startswith(MAGIC)  # the watcher writes v2
        raw = read_raw(value)
        found.setdefault(raw.path, []).append(raw)
    return found


async def write_in_chunks(path: Path, chunks: list[str], pause: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for chunk in chunks:
            fh.write(chunk)
            fh.flush()
            await asyncio.sleep(pause)


async def test_only_complete_versions_reach_the_briefing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The quiet period (1 s) is longer than any pause of these writers (0.4 s).
    s = make_settings(quiet_seconds=1.0)
    await kafka_io.ensure_topics(s)
    root = s.root
    with running_worker(s, tmp_path):
        stop = asyncio.Event()
        watcher = asyncio.create_task(publish_root(s, follow=True, stop=stop))
        try:
            await async_wait_for(
                lambda: metric(watcher_metrics(s), "predigest_kafka_up") == 1, 30, "the watcher"
            )
            # 1. written in five chunks over two seconds; 2. written under a temp name, renamed into place;
            # 3. deleted before the watcher could read it.
            temp = root / "inbox/tom/.2026-09-27-1100-renamed.md.tmp"

            async def rename_into_place() -> None:
                await write_in_chunks(temp, CHUNKS[:3], 0.3)
                os.replace(temp, root / RENAMED)

            async def write_then_delete() -> None:
                await write_in_chunks(root / DELETED, ["# vLLM half a note\n"], 0.2)
                (root / DELETED).unlink()

            (root / EDITED).parent.mkdir(parents=True, exist_ok=True)
            (root / EDITED).write_text("# vLLM 推理 first version\nTTFT 120 ms.\n", encoding="utf-8")
            await asyncio.gather(
                write_in_chunks(root / CHUNKED, CHUNKS, 0.4), rename_into_place(), write_then_delete()
            )

            async def seen(path: str, versions: int = 1) -> bool:
                return len((await raw_versions(s)).get(path, [])) >= versions

            for path in (CHUNKED, RENAMED, EDITED):
                deadline = asyncio.get_running_loop().time() + 30
                while not await seen(path):
                    assert asyncio.get_running_loop().time() < deadline, f"{path} was never published"
                    await asyncio.sleep(0.3)
            # 4. edited "an hour later": new bytes and an mtime an hour on.
            first_mtime = (root / EDITED).stat().st_mtime
            (root / EDITED).write_text(
                "# vLLM 推理 second version\nTTFT 80 ms after the fix.\n", encoding="utf-8"
            )
            os.utime(root / EDITED, (first_mtime + 3600, first_mtime + 3600))
            deadline = asyncio.get_running_loop().time() + 30
            while not await seen(EDITED, 2):
                assert asyncio.get_running_loop().time() < deadline, "the edit was never published"
                await asyncio.sleep(0.3)
            await wait_ingested(s, 60)
            await send_command(s, "inference", "flush", END)
            briefing = await await_briefing(s, "inference", END, "flush", 60)
            vanished = metric(watcher_metrics(s), "predigest_documents_rejected_total", reason="vanished")
        finally:
            stop.set()
            await watcher

    raw = await raw_versions(s)
    assert [r.content.decode() for r in raw[CHUNKED]] == ["".join(CHUNKS)]  # one version, the whole file
    assert [r.content.decode() for r in raw[RENAMED]] == ["".join(CHUNKS[:3])]
    assert not any(".tmp" in path for path in raw)
    assert DELETED not in raw and vanished == 1
    assert [r.mtime for r in raw[EDITED]][1] - raw[EDITED][0].mtime == pytest.approx(3600, abs=2)

    sources = {(src.path, src.status): src for src in briefing.sources}
    assert sources[(CHUNKED, "used")].bytes == len("".join(CHUNKS).encode())
    assert (RENAMED, "used") in sources or (RENAMED, "no_increment") in sources
    current = [src for src in briefing.sources if src.path == EDITED and src.status != "superseded"]
    superseded = [src for src in briefing.sources if src.path == EDITED and src.status == "superseded"]
    assert [src.title for src in current] == ["vLLM 推理 second version"]
    assert [src.title for src in superseded] == ["vLLM 推理 first version"]
    assert DELETED not in {src.path for src in briefing.sources}
