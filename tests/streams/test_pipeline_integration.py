"""The walking skeleton end to end on the real local broker: watcher, worker, flush, once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from pydantic import SecretStr

from processors.models import Briefing
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import async_wait_for, raw_paths, read_topic, running_worker, until_raw_has, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROJECT = Path(__file__).resolve().parents[2]
SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def _note(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _once_topics(bootstrap: str) -> list[str]:
    return [t for t in asyncio.run(_topics(bootstrap)) if t.startswith("predigest-once-")]


def test_once_on_the_example_root_writes_a_valid_briefing(kafka_bootstrap: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    predigest = Path(sys.executable).parent / "predigest"
    once = [str(predigest), "once", "--root", "examples/root", "--axis", "inference"]
    # Other tests' runs (one killed outright, say) may leave theirs on the shared broker: only this run's count.
    before = set(_once_topics(kafka_bootstrap))
    result = subprocess.run(
        [*once, "--end", END.isoformat(), "--out", str(out)],
        cwd=PROJECT,
        env={"PREDIGEST_KAFKA__BOOTSTRAP": kafka_bootstrap, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    # Its topics served this run only: they are gone, and it said so.
    assert "deleted this run's" in result.stderr
    # The broker deletes asynchronously: the list catches up within seconds.
    deadline = time.monotonic() + 30
    while (
        leftover := [t for t in _once_topics(kafka_bootstrap) if t not in before]
    ) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not leftover, leftover
    folder = out / "inference"
    briefing = Briefing.model_validate_json((folder / "2026-09-27-inference-e1prep.json").read_text())
    markdown = (folder / "2026-09-27-inference-e1prep.md").read_text()

    by_path = {s.path: s for s in briefing.sources}
    assert "inbox/tom/2026-09-20-0900-old-inference-note.md" not in by_path  # a week old: outside the window
    assert by_path["inbox/tom/2026-09-26-inference-e1prep.md"].relevance.label == "基线"
    repost = by_path["inbox/jay/2026-09-27-1700-csdn-inference-engineering-repost.md"]
    assert (repost.status, repost.duplicate_kind) == ("duplicate", "near")
    assert (
        repost.duplicate_of
        == "inbox/jay/2026-09-27-1620-csdn-inference-engineering-llmops-speculative-decoding-sep27.md"
    )
    assert by_path["inbox/jay/2026-09-27-1335-jay-security-inference-rag-stack-sep27.md"].status == "used"
    assert {"2607.20468", "2609.23130", "2609.06674", "2609.19969"} <= set(briefing.summary.new_arxiv)
    assert "2511.01815" in briefing.summary.continued_arxiv  # the living document cites KVTC
    increments = {i: inc for inc in briefing.increments for i in inc.arxiv}
    assert {"2609.23130", "2607.20468", "2609.06674", "2609.19969"} <= set(increments)
    assert "2511.01815" not in increments  # continued and nothing new about it
    assert any(inc.title.startswith("CSDN 推理工程化") and not inc.arxiv for inc in briefing.increments)
    assert increments["2609.19969"].suggested_sections[0] == "§3.3"  # the card's anchor
    assert increments["2609.23130"].suggested_sections == ["§1.2"]  # llm-d: its K8s orchestration section
    assert "§3.8" in increments["2609.06674"].suggested_sections  # a side channel: KV cache security
    # Yesterday's baseline ended at D194; the D series goes on, version conflict first.
    assert [(d.id, d.kind) for d in briefing.discrepancies][:4] == [
        ("D195", "version_conflict"),
        ("D196", "arxiv_id_conflict"),
        ("D197", "future_arxiv_id"),
        ("D198", "flagged"),
    ]
    assert "vLLM 0.3.3" in briefing.discrepancies[0].subject
    assert briefing.living_doc.version == "v3.44"
    for heading in ("状态摘要", "一、检查过的来源清单", "二、增量条目", "七、建议今晚 E2 活文档更新优先级"):
        assert heading in markdown


async def _topics(bootstrap: str) -> list[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return list(await admin.list_topics())
    finally:
        await admin.close()


async def test_watcher_publishes_files_written_while_it_runs(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(token=SecretStr("s3cret"))
    await kafka_io.ensure_topics(s)
    note, card = "inbox/jay/2026-09-27-1000-kv-note.md", "paper_cards/1417-2609-19969.md"
    with running_worker(s, tmp_path):
        stop = asyncio.Event()
        watcher = asyncio.create_task(publish_root(s, follow=True, stop=stop))
        await asyncio.sleep(1.0)
        _note(s.root, note, "# KV cache 推理笔记\n\nvLLM serving: arXiv:2609.23130 cache hit 92.2%.\n")
        with (s.root / card).open("w", encoding="utf-8") as fh:  # written in two chunks
            fh.write("---\nprimary: inference\ndate: 2026-09-27T09:00:00+08:00\n---\n# DeepSeek-V4.1-Flash\n")
            fh.flush()
            await asyncio.sleep(0.1)
            fh.write("KV cache compression for inference serving.\n")
        await until_raw_has(s, {note, card}, 30, "the live files on the raw topic")
        await wait_ingested(s, 60)
        url = worker_url(s, "/flush")
        params = {"axis": "inference", "end": END.isoformat()}
        async with httpx.AsyncClient(headers={"X-Predigest-Request": "1"}) as http:
            refused = await http.post(url, params=params)
            assert refused.status_code == 401
            accepted = await http.post(url, params=params, headers={"Authorization": "Bearer s3cret"})
            assert accepted.status_code == 202, accepted.text
        briefing = await await_briefing(s, "inference", END, "flush", 60)
        stop.set()
        await watcher
    paths = {src.path for src in briefing.sources}
    assert {note, card} <= paths
    assert (s.out_dir / "inference" / "2026-09-27-inference-e1prep-flush-2220.md").exists()


async def test_a_restarted_watcher_publishes_nothing_twice(make_settings: Callable[..., Settings]) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    a = _note(s.root, "inbox/tom/2026-09-27-0900-a.md", "# a\ninference note a\n")
    _note(s.root, "inbox/tom/2026-09-27-0910-b.md", "# b\ninference note b\n")
    _note(s.root, "living/inference.md", "# inference.md v1.0\n## §1 x\n")

    assert await publish_root(s, follow=False, stop=asyncio.Event()) == 3
    assert await publish_root(s, follow=False, stop=asyncio.Event()) == 0  # restart: nothing changed
    a.touch()  # a new mtime with the same bytes is not a new version
    assert await publish_root(s, follow=False, stop=asyncio.Event()) == 0
    a.write_text("# a\ninference note a, edited\n", encoding="utf-8")
    assert await publish_root(s, follow=False, stop=asyncio.Event()) == 1

    paths = await raw_paths(s)
    assert sorted(paths) == sorted(
        ["inbox/tom/2026-09-27-0900-a.md"] * 2 + ["inbox/tom/2026-09-27-0910-b.md", "living/inference.md"]
    )


async def test_the_same_flush_twice_gives_one_briefing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    _note(s.root, "inbox/jay/2026-09-27-1200-n.md", "# vLLM 推理\nKV cache serving arXiv:2609.23130\n")
    await publish_root(s, follow=False, stop=asyncio.Event())
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", END)
        await send_command(s, "inference", "flush", END)
        await await_briefing(s, "inference", END, "flush", 60)

        def repeated() -> bool:
            body = httpx.get(worker_url(s, "/metrics"), timeout=2).text
            return 'predigest_briefing_commands_repeated_total{axis="inference",trigger="flush"} 1.0' in body

        await async_wait_for(repeated, 30, "the repeated command to be counted")
    assert len(await read_topic(s, "briefings")) == 1
    assert sorted(p.name for p in (s.out_dir / "inference").iterdir()) == [
        "2026-09-27-inference-e1prep-flush-2220.json",
        "2026-09-27-inference-e1prep-flush-2220.md",
    ]
