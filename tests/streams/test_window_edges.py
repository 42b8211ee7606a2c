"""Window edges on the real pipeline: [start, end), the grace period, late documents, empty windows, zones."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from processors.models import Briefing
from sinks.files import FILE_MODE, PROCESS_UMASK
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import async_wait_for, read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

SH = ZoneInfo("Asia/Shanghai")
GRACE = 15.0


def note(root: Path, rel: str, when: datetime, title: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\ndate: {when.isoformat()}\n---\n# {title}\nvLLM 推理 serving note.\n", encoding="utf-8"
    )
    return rel


async def publish(s: Settings) -> None:
    await publish_root(s, follow=False, stop=asyncio.Event())


def paths(b: Briefing) -> set[str]:
    return {src.path for src in b.sources}


async def test_edges_grace_and_a_document_later_than_its_close(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    now = datetime.now(SH).replace(microsecond=0)
    end = now + timedelta(seconds=12)  # today's scheduled close, a few seconds from now
    if end.date() != (end + timedelta(seconds=GRACE + 60)).date():
        await asyncio.sleep(90)  # not across local midnight: the schedule is per day
        return await test_edges_grace_and_a_document_later_than_its_close(make_settings, tmp_path)
    s = make_settings(close_enabled=True, close_at=end.time(), grace_seconds=GRACE, close_check_seconds=1.0)
    await kafka_io.ensure_topics(s)
    day = timedelta(hours=24)
    at_start = note(s.root, "inbox/jay/at-start.md", end - day, "at the start")
    before_start = note(s.root, "inbox/jay/before-start.md", end - day - timedelta(seconds=1), "just before")
    before_end = note(s.root, "inbox/jay/before-end.md", end - timedelta(seconds=1), "just before the end")
    at_end = note(s.root, "inbox/jay/at-end.md", end, "at the end")
    await publish(s)
    with running_worker(s, tmp_path):
        await asyncio.sleep(max(0.0, (end - datetime.now(SH)).total_seconds() + 1))
        # After the window's end, within its grace: a note dated inside the window.
        within = note(s.root, "inbox/tom/late-within-grace.md", end - timedelta(minutes=10), "late, in grace")
        await publish(s)
        assert datetime.now(SH) < end + timedelta(seconds=GRACE), (
            "too slow: the grace was over before the note"
        )
        close = await await_briefing(s, "inference", end, "close", 60)  # sent by the worker's close timer
        # Every axis closed (each axis's close is its own emission), then a note dated inside the same window.
        for other in [a.name for a in s.axes if a.name != "inference"]:
            await await_briefing(s, other, end, "close", 60)
        after = note(s.root, "inbox/tom/late-after-close.md", end - timedelta(minutes=5), "late, after close")
        await publish(s)
        await wait_ingested(s, 60)
        await send_command(s, "inference", "close", end)  # a repeated close: the emission stands
        flush_end = end + timedelta(minutes=1)
        await send_command(s, "inference", "flush", flush_end)
        flush = await await_briefing(s, "inference", flush_end, "flush", 60)

        def repeated() -> bool:
            body = httpx.get(worker_url(s, "/metrics"), timeout=2).text
            return 'predigest_briefing_commands_repeated_total{axis="inference",trigger="close"} 1.0' in body

        await async_wait_for(repeated, 30, "the repeated close to be counted")

    assert {at_start, before_end, within} <= paths(close)
    assert not {before_start, at_end, after} & paths(close)
    assert {before_end, at_end, within, after} <= paths(flush)
    assert at_start not in paths(flush)  # the flush's window starts a minute later
    emitted = [Briefing.model_validate_json(v) for _, v in await read_topic(s, "briefings")]
    # A worker with no close yet also closes yesterday's window (the latest one due) when it starts.
    closes = [b for b in emitted if b.trigger == "close" and b.window.end == end]
    assert sorted(b.axis for b in closes) == sorted(a.name for a in s.axes)  # one close per axis, none twice
    stem = f"{end:%Y-%m-%d}-inference-e1prep"
    on_disk = Briefing.model_validate_json((s.out_dir / "inference" / f"{stem}.json").read_text())
    assert on_disk == close  # the repeated close did not rewrite it with the late note

    # An axis none of whose keywords the notes use weighs the same window: every note is accounted for, none
    # yields an increment there.
    risk = next(b for b in closes if b.axis == "risk")
    assert {src.path for src in risk.sources} == paths(close) and risk.increments == []
    assert {n.path for n in risk.no_increment_sources} == paths(close)


@pytest.mark.parametrize(
    ("zone", "flush_name", "close_name", "inside", "outside"),
    [
        (
            "Asia/Shanghai",
            "2026-09-27-inference-e1prep-flush-2220",
            "2026-09-28-inference-e1prep",
            "inbox/jay/2026-09-27-2200-evening.md",
            "inbox/jay/2026-09-26-2000-day-before.md",
        ),
        (
            "UTC",
            "2026-09-27-inference-e1prep-flush-1420",
            "2026-09-27-inference-e1prep",
            "inbox/jay/2026-09-26-2000-day-before.md",
            "inbox/jay/2026-09-27-2200-evening.md",
        ),
    ],
)
async def test_the_zone_sets_window_bounds_stamps_and_file_names(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    zone: str,
    flush_name: str,
    close_name: str,
    inside: str,
    outside: str,
) -> None:
    s = make_settings(zone=zone)
    await kafka_io.ensure_topics(s)
    for rel in ("inbox/jay/2026-09-27-2200-evening.md", "inbox/jay/2026-09-26-2000-day-before.md"):
        (s.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.root / rel).write_text("# vLLM 推理\nserving note without front matter\n", encoding="utf-8")
    await publish(s)
    flush_end = datetime(2026, 9, 27, 14, 20, tzinfo=UTC)  # 22:20 in Shanghai
    close_end = datetime(2026, 9, 27, 18, 0, tzinfo=UTC)  # 02:00 the next day in Shanghai
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", flush_end)
        await send_command(s, "inference", "close", close_end)
        flush = await await_briefing(s, "inference", flush_end, "flush", 60)
        await await_briefing(s, "inference", close_end, "close", 60)
    assert (flush.window.start, flush.window.end) == (flush_end - timedelta(hours=24), flush_end)
    assert inside in paths(flush) and outside not in paths(flush)
    assert (s.out_dir / "inference" / f"{flush_name}.md").exists()
    assert (s.out_dir / "inference" / f"{close_name}.md").exists()
    local_end = flush_end.astimezone(ZoneInfo(zone))
    assert f"{local_end:%Y-%m-%d %H:%M}" in (s.out_dir / "inference" / f"{flush_name}.md").read_text()


async def test_two_flushes_in_one_minute_keep_both_briefings(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(zone="Asia/Shanghai")
    await kafka_io.ensure_topics(s)
    first_end = datetime(2026, 9, 27, 21, 38, 5, tzinfo=SH)
    second_end = datetime(2026, 9, 27, 21, 38, 40, tzinfo=SH)
    note(s.root, "inbox/jay/first.md", first_end - timedelta(hours=1), "first")
    await publish(s)
    with running_worker(s, tmp_path):
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", first_end)
        first = await await_briefing(s, "inference", first_end, "flush", 60)
        note(s.root, "inbox/jay/second.md", first_end + timedelta(seconds=10), "second")
        await publish(s)
        await wait_ingested(s, 60)
        await send_command(s, "inference", "flush", second_end)
        second = await await_briefing(s, "inference", second_end, "flush", 60)
    folder = s.out_dir / "inference"
    one = Briefing.model_validate_json((folder / "2026-09-27-inference-e1prep-flush-213805.json").read_text())
    two = Briefing.model_validate_json((folder / "2026-09-27-inference-e1prep-flush-213840.json").read_text())
    assert (one, two) == (first, second)  # the first briefing is still on disk, next to the second
    assert paths(one) == {"inbox/jay/first.md"} and paths(two) == {
        "inbox/jay/first.md",
        "inbox/jay/second.md",
    }
    mode = (folder / "2026-09-27-inference-e1prep-flush-213805.md").stat().st_mode & 0o777
    assert mode == FILE_MODE & ~PROCESS_UMASK  # readable by the host's users, as a file they saved would be
