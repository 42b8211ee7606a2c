"""Large roots stay cheap (issue 15 item 7): a rescan runs beside the event path, never in front of it, and what
a writer changes now goes out before a rescan's backlog."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from processors.quiet import Stat
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import watcher as watcher_module
from streams.settings import KafkaSettings, Settings
from streams.tree_listing import Changes, TreeListing
from streams.watcher import Watcher
from tests.clocks import ManualClock
from tests.streams.watcher_support import FakeProducer, counting_opens, write_old
from tests.support import async_wait_for


def _settings(tmp_path: Path, **extra: object) -> Settings:
    root = tmp_path / "root"
    (root / "inbox/jay").mkdir(parents=True)
    return Settings(
        root=root,
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.timeout(60)
async def test_a_new_note_is_published_within_the_quiet_period_while_a_rescan_is_still_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 15: each rescan of 100,000 files blocked the watcher for 100 s, and a new note waited 107 s.
    s = _settings(tmp_path, quiet_seconds=0.5, rescan_seconds=0.2)
    listing, release = threading.Event(), threading.Event()
    real = TreeListing.changes

    def slow(
        self: TreeListing, known: Mapping[str, Stat], full: bool, pending: Mapping[str, Stat]
    ) -> Changes:
        if self._rescans > 0:  # the startup scan goes through; every rescan after it takes "100 s"
            listing.set()
            release.wait(30)
        return real(self, known, full, pending)

    monkeypatch.setattr(TreeListing, "changes", slow)
    producer, ledger = FakeProducer(), Ledger(s.ledger_file)
    watcher, stop = Watcher(s, producer, ledger, WatcherMetrics()), asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await async_wait_for(listing.is_set, 10, "a rescan to start listing")
        (s.root / "inbox/jay/2026-09-27-1000-new.md").write_text("# new\n", encoding="utf-8")
        written = time.monotonic()
        await async_wait_for(lambda: len(producer.sent) == 1, 10, "the new note", interval=0.01)
        took = time.monotonic() - written
        assert listing.is_set() and not release.is_set()  # the rescan was listing all along
        # The rescan holds its listing 30 s: a note sent well before that did not wait for it (margin for load).
        assert took < s.quiet_seconds + 5.0, f"the new note waited {took:.2f}s"
    finally:
        release.set()
        stop.set()
        await task
        ledger.close()


async def test_what_a_writer_changes_goes_out_before_a_rescans_backlog(tmp_path: Path) -> None:
    s = _settings(tmp_path, quiet_seconds=0.5)
    for i in range(watcher_module.BATCH_FILES + 100):
        write_old(s.root / f"inbox/jay/2026-09-26-old-{i:04d}.md", f"# old {i}\n")
    producer, ledger = FakeProducer(), Ledger(s.ledger_file)
    watcher = Watcher(s, producer, ledger, WatcherMetrics())
    assert await watcher.rescan() == (watcher_module.BATCH_FILES + 100, 0)
    new = s.root / "inbox/jay/2026-09-27-1000-new.md"
    new.write_text("# new\n", encoding="utf-8")
    os.replace(new, s.root / "inbox/jay/2026-09-27-1000-renamed.md")  # a writer finished it
    watcher.moved(s.root / "inbox/jay/2026-09-27-1000-renamed.md")
    assert await watcher.settle() == watcher_module.BATCH_FILES  # one batch: the writer's note in it, first
    assert producer.sent[0].path == "inbox/jay/2026-09-27-1000-renamed.md"
    assert await watcher.drain() == 101
    assert len({r.path for r in producer.sent}) == watcher_module.BATCH_FILES + 101
    ledger.close()


async def test_a_note_rewritten_in_place_while_pending_is_published_as_rewritten_without_a_rescan_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A first start's rescans re-stat'ed every note not yet acknowledged (0.3-0.5 million stats a 100k start,
    # rescan45): one pending at the stat its folder's listing has is left to its settle, which still sees an edit.
    s, now = _settings(tmp_path, quiet_seconds=1.0), time.time()
    clock, producer = ManualClock(datetime.fromtimestamp(now, UTC)), FakeProducer()
    ledger = Ledger(s.ledger_file)
    note = s.root / "inbox/jay/2026-09-27-1000-edit.md"
    note.write_text("# v1\n", encoding="utf-8")
    os.utime(note, (now, now))  # written just now: not quiet until the clock moves
    os.utime(s.root / "inbox/jay", (now - 3600, now - 3600))  # an unchanged folder: listed once, then trusted
    watcher = Watcher(s, producer, ledger, WatcherMetrics(), clock=clock)
    assert await watcher.rescan() == (1, 0)
    note.write_text("# v2, longer\n", encoding="utf-8")  # in place: the folder's mtime stays
    os.utime(note, (now + 0.5, now + 0.5))
    opened = counting_opens(monkeypatch)
    assert await watcher.rescan() == (0, 0)  # pending at the listed stat: not looked at, not reported again
    assert opened.count("jay") == 0
    clock.advance(1.5)
    assert await watcher.settle() == 0  # its settle's stat sees the edit: quiet again from now
    clock.advance(1.5)
    assert await watcher.settle() == 1
    assert [r.content for r in producer.sent] == [b"# v2, longer\n"]
    ledger.close()
