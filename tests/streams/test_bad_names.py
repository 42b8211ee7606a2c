"""Files whose names are not valid UTF-8, on the real broker: the watcher's one-shot scan and `predigest backfill`
refuse each one under its escaped name (a WARNING, a metric, a refusal the briefing lists) and send the others."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from processors.models import RawFile
from processors.raw_record import read_raw
from streams import kafka_io
from streams.backfill import backfill
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NOTE = "inbox/jay/2026-12-07-note.md"
# Escaped as a reader sees them; the second is what a plain backslashreplace would make of the first as well.
BAD = {
    b"inbox/jay/2026-12-07-\xff\xfe.md": "inbox/jay/2026-12-07-\\xff\\xfe.md",
    b"inbox/jay/2026-12-07-\\xff\xfe.md": "inbox/jay/2026-12-07-\\\\xff\\xfe.md",
    # Under a folder so named, each file (it was one row, the folder's, its files unnamed)
    b"inbox/tom\xe9/2026-12-07-inside.md": "inbox/tom\\xe9/2026-12-07-inside.md",
    b"inbox/tom\xe9/2026-12-07-also.md": "inbox/tom\\xe9/2026-12-07-also.md",
}
# Valid names typed as the escapes above (with real backslashes), beside them: read, and keyed apart (they took
# the bad names' keys, so that those were never listed).
LOOKALIKE = {
    b"inbox/jay/2026-12-07-\\xff\\xfe.md": "inbox/jay/2026-12-07-\\\\xff\\\\xfe.md",
    b"inbox/tom\\xe9/2026-12-07-inside.md": "inbox/tom\\\\xe9/2026-12-07-inside.md",
}


def _make_root(root: Path) -> None:
    (root / "inbox/jay").mkdir(parents=True)
    (root / NOTE).write_text("# vLLM 推理\n", encoding="utf-8")
    for name in BAD:
        _write(root, name, b"# vLLM secret-of-a-bad-name\n")
    for name in LOOKALIKE:
        _write(root, name, b"# vLLM look-alike\n")


def _write(root: Path, name: bytes, data: bytes) -> None:
    path = os.fsencode(root) + b"/" + name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY)
    os.write(fd, data)
    os.close(fd)


async def _raw(settings: Settings) -> dict[str, list[RawFile]]:
    found: dict[str, list[RawFile]] = {}
    for key, value in await read_topic(settings, "raw"):
        raw = read_raw(value)
        assert key == raw.path.encode()  # keyed by the escaped name: a partition and a state row of its own
        found.setdefault(raw.path, []).append(raw)
    return found


@pytest.fixture
def watched(make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture) -> Settings:
    """A root with `inbox/jay/` to watch, rescanned hourly (only the watch, or a rescan it asks for, finds a note);
    INFO lines captured."""
    settings = make_settings(rescan_seconds=3600.0)
    (settings.root / "inbox/jay").mkdir(parents=True)
    caplog.set_level(logging.INFO)
    return settings


@contextlib.asynccontextmanager
async def _watching(settings: Settings) -> AsyncIterator[None]:
    """`predigest watch` on the root, past its start-up scan; stopped and awaited at the end."""
    await kafka_io.ensure_topics(settings)
    stop = asyncio.Event()
    watching = asyncio.create_task(publish_root(settings, follow=True, stop=stop))
    try:
        await asyncio.sleep(2.0)  # its start-up scan
        yield
    finally:
        stop.set()
        await watching


async def _raw_until(
    settings: Settings, seen: Callable[[dict[str, list[RawFile]]], bool], seconds: float = 30
) -> dict[str, list[RawFile]]:
    """The raw topic's records by path once `seen` holds of them; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while not seen(found := await _raw(settings)):
        assert time.monotonic() < deadline, {path: len(raws) for path, raws in found.items()}
        await asyncio.sleep(0.5)
    return found


def _assert_refused(found: dict[str, list[RawFile]], caplog: pytest.LogCaptureFixture) -> None:
    assert sorted(found) == sorted([NOTE, *BAD.values(), *LOOKALIKE.values()])
    assert found[NOTE][0].content == "# vLLM 推理\n".encode()
    for rel in LOOKALIKE.values():
        [raw] = found[rel]
        assert (raw.content, raw.refused_code) == (b"# vLLM look-alike\n", None)
    for rel in BAD.values():
        [raw] = found[rel]
        assert (raw.content, raw.refused_code) == (b"", "bad_name")
        # Under a folder so named the file's own name is fine: the folder is what to rename.
        rename = "rename that folder" if rel.startswith("inbox/tom\\xe9/") else "rename it"
        assert "not valid UTF-8" in (raw.refused or "") and rename in (raw.refused or "")
        [line] = [r for r in caplog.records if r.levelno == logging.WARNING and rel in r.getMessage()]
        assert rename in line.getMessage()


async def test_the_watcher_s_scan_refuses_a_name_that_is_not_utf8_once_and_publishes_the_rest(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings()
    _make_root(settings.root)
    caplog.set_level(logging.INFO)
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 1 + len(BAD) + len(LOOKALIKE)
    _assert_refused(await _raw(settings), caplog)
    # Not sent again by the next scan; renamed, its refusal is deleted and the file published under its new name.
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0
    base = os.fsencode(settings.root)
    os.rename(base + b"/inbox/jay/2026-12-07-\xff\xfe.md", base + b"/inbox/jay/2026-12-07-renamed.md")
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 2
    found = await _raw(settings)
    assert found["inbox/jay/2026-12-07-\\xff\\xfe.md"][-1].deleted
    assert found["inbox/jay/2026-12-07-renamed.md"][0].content == b"# vLLM secret-of-a-bad-name\n"


async def test_the_backfill_refuses_a_name_that_is_not_utf8_and_the_watcher_does_not_send_it_again(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings()
    _make_root(settings.root)
    caplog.set_level(logging.INFO)
    report = await backfill(settings)
    files = 1 + len(BAD) + len(LOOKALIKE)
    assert (report.files, report.published, report.refused) == (files, 1 + len(LOOKALIKE), len(BAD))
    _assert_refused(await _raw(settings), caplog)
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0
    assert (await backfill(settings)).published == 0


async def test_a_bad_folder_s_own_row_listed_until_2026_12_07_is_deleted_and_its_files_listed(
    make_settings: Callable[..., Settings],
) -> None:
    # The row a scan of an older version left for the folder (refused as one entry): a file of that name here.
    settings = make_settings()
    _make_note(settings.root)
    _write(settings.root, b"inbox/tom\xe9", b"")
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 2
    os.remove(os.fsencode(settings.root) + b"/inbox/tom\xe9")
    _write(settings.root, b"inbox/tom\xe9/2026-12-07-inside.md", b"# inside\n")
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 2
    found = await _raw(settings)
    assert found["inbox/tom\\xe9"][-1].deleted  # forgotten: not refused again at every scan
    [raw] = found["inbox/tom\\xe9/2026-12-07-inside.md"]
    assert raw.refused_code == "bad_name"
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0


async def test_watch_refuses_a_name_that_is_not_utf8_written_while_it_runs_and_goes_on_watching(
    watched: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # watchfiles cannot name such a file: its watch ended, and every later note waited for the hourly rescan.
    bad = "inbox/jay/2026-12-07-\\xff\\xfe.md"
    async with _watching(watched):
        os.close(
            os.open(
                os.fsencode(watched.root) + b"/inbox/jay/2026-12-07-\xff\xfe.md", os.O_CREAT | os.O_WRONLY
            )
        )
        await asyncio.sleep(2.0)
        (watched.root / NOTE).write_text("# vLLM 推理\n", encoding="utf-8")
        await _raw_until(watched, lambda found: {NOTE, bad} <= set(found))
        await asyncio.sleep(3.0)  # another event after the lost batch is still seen
        (watched.root / "inbox/jay/2026-12-07-later.md").write_text("# later\n", encoding="utf-8")
        found = await _raw_until(watched, lambda found: "inbox/jay/2026-12-07-later.md" in found)
    [raw] = found[bad]
    assert raw.refused_code == "bad_name"
    assert any(f"{bad}: it has a name that is not valid UTF-8" in r.getMessage() for r in caplog.records)


async def test_a_note_written_while_the_watch_restarts_is_found_by_the_rescan_not_an_hour_later(
    watched: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # The rescan ran at once, during the second the watch was down: a note written after it waited for the next one.
    async with _watching(watched):
        os.close(
            os.open(os.fsencode(watched.root) + b"/inbox/jay/2026-12-07-\xff.md", os.O_CREAT | os.O_WRONLY)
        )
        deadline = time.monotonic() + 30
        while not any("file events lost" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the watch is not back yet
        (watched.root / NOTE).write_text("# vLLM 推理\n", encoding="utf-8")
        await _raw_until(watched, lambda found: NOTE in found, seconds=20)


async def test_a_bad_name_written_on_and_on_restarts_the_watch_less_and_less_often(
    watched: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # Each restart walks the whole root again (0.3 s of CPU for 100k files) and warns: a log written under such a
    # name made that every 1.2 s for as long as it was written.
    async with _watching(watched):
        fd = os.open(os.fsencode(watched.root) + b"/inbox/jay/2026-12-07-\xff.log", os.O_CREAT | os.O_WRONLY)
        for _ in range(40):  # 12 s of writes
            os.write(fd, b"a line\n")
            await asyncio.sleep(0.3)
        os.close(fd)
        (watched.root / NOTE).write_text("# vLLM 推理\n", encoding="utf-8")
        # The watch, or its rescan, still sees the rest.
        await _raw_until(watched, lambda found: NOTE in found, seconds=60)
    lost = [r for r in caplog.records if "file events lost" in r.getMessage()]
    assert 1 <= len(lost) <= 5, len(lost)  # 11 when it waited 1 s each time


async def test_a_note_edited_in_place_in_the_lost_batch_is_sent_by_the_rescan_that_follows(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    # An edit in place leaves its folder's mtime as it was: a rescan of the changed folders only did not see it,
    # and it waited for the tenth rescan, a full one (ten minutes by default).
    settings = make_settings(rescan_seconds=3600.0)
    (settings.root / "inbox/tom").mkdir(parents=True)
    _make_note(settings.root)
    caplog.set_level(logging.INFO)
    await asyncio.sleep(2.5)  # the folders' listings are trusted as they are
    async with _watching(settings):
        await _raw_until(settings, lambda found: NOTE in found)
        os.close(os.open(os.fsencode(settings.root) + b"/inbox/tom/\xff.md", os.O_CREAT | os.O_WRONLY))
        fd = os.open(settings.root / NOTE, os.O_WRONLY | os.O_APPEND)  # in place: the folder mtime as it was
        os.write(fd, b"more\n")
        os.close(fd)
        found = await _raw_until(settings, lambda found: len(found.get(NOTE, [])) >= 2)
    assert found[NOTE][-1].content == "# vLLM 推理\nmore\n".encode()


def _make_note(root: Path) -> None:
    (root / "inbox/jay").mkdir(parents=True)
    (root / NOTE).write_text("# vLLM 推理\n", encoding="utf-8")
