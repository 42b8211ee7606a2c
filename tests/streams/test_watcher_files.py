"""The watcher against a real folder and a fake producer: refusals, vanishing files, quiet periods, renames."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from aiokafka.errors import KafkaConnectionError, OutOfOrderSequenceNumber

from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import root_files
from streams.settings import KafkaSettings, Settings
from streams.watcher import Watcher
from tests.clocks import ManualClock
from tests.streams.watcher_support import FakeProducer, counting_opens, write_old
from tests.support import async_wait_for


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for top in ("inbox/jay", "paper_cards", "living"):
        (tmp_path / "root" / top).mkdir(parents=True)
    return tmp_path / "root"


@pytest.fixture
def parts(root: Path, tmp_path: Path) -> Iterator[tuple[Watcher, FakeProducer, Ledger, WatcherMetrics]]:
    s = Settings(
        root=root,
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        quiet_seconds=0.5,
    )
    producer, ledger, metrics = FakeProducer(), Ledger(s.ledger_file), WatcherMetrics()
    yield Watcher(s, producer, ledger, metrics), producer, ledger, metrics
    ledger.close()


def after_the_next_read(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> None:
    """`then()` right after the watcher's next read of a file's bytes (a writer racing it), once."""
    real = root_files._read_at_most

    def read_then(fd: int, limit: int) -> bytes:
        data = real(fd, limit)
        then()
        monkeypatch.setattr(root_files, "_read_at_most", real)
        return data

    monkeypatch.setattr(root_files, "_read_at_most", read_then)


def rejected(m: WatcherMetrics, reason: str) -> float:
    return m.registry.get_sample_value("predigest_documents_rejected_total", {"reason": reason}) or 0.0


async def test_symlinks_and_special_files_are_refused_once_and_reach_kafka_as_refusals(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, tmp_path: Path
) -> None:
    watcher, producer, _ledger, m = parts
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n", encoding="utf-8")
    write_old(root / "inbox/jay/2026-09-27-note.md", "# note\n")
    os.symlink(secret, root / "inbox/jay/2026-09-27-leak.md")
    os.symlink(root / "inbox/jay/2026-09-27-note.md", root / "inbox/jay/2026-09-27-alias.md")
    os.symlink(tmp_path, root / "paper_cards/elsewhere")  # a symlinked folder: listed, refused, not followed
    os.mkfifo(root / "inbox/jay/2026-09-27-pipe.md")  # reading it would block the watcher forever

    assert await watcher.scan() + await watcher.drain() == 5
    by_path = {r.path: r for r in producer.sent}
    assert by_path["inbox/jay/2026-09-27-note.md"].content == b"# note\n"
    for rel in ("inbox/jay/2026-09-27-leak.md", "inbox/jay/2026-09-27-alias.md", "paper_cards/elsewhere"):
        assert by_path[rel].content == b"" and "symlink" in (by_path[rel].refused or "")
        assert by_path[rel].refused_code == "symlink"  # the worker's rejection code and metric label
    assert "not a regular file" in (by_path["inbox/jay/2026-09-27-pipe.md"].refused or "")
    assert by_path["inbox/jay/2026-09-27-pipe.md"].refused_code == "special"
    assert not any(b"hunter2" in r.content or "hunter2" in (r.refused or "") for r in producer.sent)
    assert (rejected(m, "symlink"), rejected(m, "special")) == (3, 1)

    assert await watcher.scan() + await watcher.drain() == 0  # a rescan does not report them again
    assert rejected(m, "symlink") == 3


async def test_a_path_under_a_symlinked_folder_is_refused_as_outside(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, tmp_path: Path
) -> None:
    watcher, producer, _ledger, m = parts
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("# outside\n", encoding="utf-8")
    os.symlink(elsewhere, root / "inbox/tom")
    watcher.mark("inbox/tom/x.md")  # as watchfiles would report it, following the link
    assert await watcher.settle(force=True) == 1
    assert "outside the root" in (producer.sent[0].refused or "")
    assert producer.sent[0].refused_code == "outside"
    assert producer.sent[0].content == b""
    assert rejected(m, "outside") == 1


async def test_a_note_whose_folder_becomes_a_symlink_out_is_refused_with_nothing_of_the_outside_file(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics],
    root: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    watcher, producer, ledger, m = parts
    caplog.set_level(logging.INFO)
    (root / "inbox/tom").mkdir()
    write_old(root / "inbox/tom/2026-12-07-x.md", "# inside\n")
    assert await watcher.scan() + await watcher.drain() == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("2026-12-07-x.md", "2026-12-07-y.md"):
        (elsewhere / name).write_bytes(b"s" * 7777)
        os.utime(elsewhere / name, (1_111_111_111, 1_111_111_111))
    os.rename(root / "inbox/tom", tmp_path / "tom.old")
    os.symlink(elsewhere, root / "inbox/tom")
    assert await watcher.scan() + await watcher.drain() == 2  # the link, and the note now under it
    watcher.mark("inbox/tom/2026-12-07-y.md")  # as watchfiles reports a file through the link
    assert await watcher.settle(force=True) == 1
    link = os.lstat(root / "inbox/tom")
    refusals = {r.path: r for r in producer.sent[1:]}
    for rel in ("inbox/tom/2026-12-07-x.md", "inbox/tom/2026-12-07-y.md"):
        assert refusals[rel].refused_code == "outside"
        assert (refusals[rel].size, refusals[rel].mtime) == (link.st_size, link.st_mtime)  # the link's own
        assert ledger.get(rel) == (link.st_size, link.st_mtime, "refused-outside")
    assert not [r for r in producer.sent if r.size == 7777 or int(r.mtime) == 1_111_111_111]
    assert "7777" not in caplog.text and "1111111111" not in caplog.text
    assert await watcher.rescan(full=True) == (0, 0)  # refused once: not "gone" again at every rescan
    assert await watcher.scan() + await watcher.drain() == 0
    assert rejected(m, "outside") == 2


@pytest.mark.parametrize(
    ("mode", "denied"),
    [(0o311, os.R_OK), (0o600, os.X_OK)],
    ids=["searchable-not-listed", "not-searchable"],
)
async def test_a_note_whose_folder_can_no_longer_be_read_is_refused_once_not_at_every_rescan(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, mode: int, denied: int
) -> None:
    # 0o311: neither listed nor opened, but stat'ed (its own size); 0o600: not even stat'ed (no size of its own).
    watcher, producer, ledger, m = parts
    write_old(root / "inbox/jay/2026-12-07-x.md", "# inside\n")
    assert await watcher.scan() + await watcher.drain() == 1
    (root / "inbox/jay").chmod(mode)
    try:
        if os.access(root / "inbox/jay", denied):
            pytest.skip("this user reads and searches any folder whatever its mode (root)")
        assert await watcher.scan() + await watcher.drain() == 1
        refusal = producer.sent[-1]
        assert refusal.refused_code == "unreadable"
        for _ in range(3):  # each rescan finds it gone again: nothing new to say
            await watcher.rescan(full=True)
            assert await watcher.drain() == 0
    finally:
        (root / "inbox/jay").chmod(0o755)
    if mode == 0o311:
        assert refusal.size == len("# inside\n")  # its own stat
        assert ledger.get("inbox/jay/2026-12-07-x.md") == (refusal.size, refusal.mtime, "refused-unreadable")
    assert rejected(m, "unreadable") == 1


async def test_a_note_readable_again_with_its_size_and_time_unchanged_is_published_by_the_next_full_rescan(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    # Its refusal hides its stored text from every briefing: a chmod back leaves its size and time as the refusal
    # recorded them, so a watcher that missed the event (stopped meanwhile, events lost) must look at it again.
    watcher, producer, ledger, _m = parts
    rel = "inbox/jay/2026-12-07-x.md"
    write_old(root / rel, "# inside\n")
    assert await watcher.scan() + await watcher.drain() == 1
    (root / rel).chmod(0)
    try:
        if os.access(root / rel, os.R_OK):
            pytest.skip("this user reads any file whatever its mode (root)")
        watcher.mark(rel)  # its event
        assert await watcher.drain() == 1 and producer.sent[-1].refused_code == "unreadable"
        await watcher.rescan(full=True)
        assert await watcher.drain() == 0  # still unreadable: refused once, not at every rescan
    finally:
        (root / rel).chmod(0o644)
    await watcher.rescan(full=True)
    assert await watcher.drain() == 1
    assert producer.sent[-1].content == b"# inside\n" and ledger.get(rel) == (
        producer.sent[-1].size,
        producer.sent[-1].mtime,
        producer.sent[-1].sha256,
    )


async def test_a_file_deleted_before_it_was_read_is_counted_and_not_published(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    watcher, producer, _ledger, m = parts
    note = root / "inbox/jay/2026-09-27-gone.md"
    note.write_text("# half\n", encoding="utf-8")
    watcher.mark("inbox/jay/2026-09-27-gone.md")
    note.unlink()
    assert await watcher.settle() == 0  # the change (gone) restarts the quiet period
    await asyncio.sleep(0.6)
    assert await watcher.settle() == 0
    assert producer.sent == []
    assert rejected(m, "vanished") == 1
    watcher.mark("inbox/jay/never-a-file")  # e.g. a folder event: not a vanished file
    assert await watcher.settle(force=True) == 0
    assert rejected(m, "vanished") == 1


async def test_a_rescan_waits_for_a_growing_file_to_be_quiet(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    watcher, producer, _ledger, _m = parts
    write_old(root / "living/inference.md", "# inference.md v1\n")
    growing = root / "inbox/jay/2026-09-27-growing.md"
    growing.write_text("# part one\n", encoding="utf-8")  # its mtime is now: still being written
    assert await watcher.scan() == 1  # only the file untouched for an hour
    with growing.open("a", encoding="utf-8") as fh:
        fh.write("part two\n")
    assert await watcher.settle() == 0
    await asyncio.sleep(0.6)
    assert await watcher.settle() == 1
    assert [r.content for r in producer.sent][-1] == b"# part one\npart two\n"


async def test_a_file_that_changes_while_it_is_read_is_read_again_later(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher, producer, _ledger, _m = parts
    note = root / "inbox/jay/2026-09-27-race.md"
    note.write_text("# v1\n", encoding="utf-8")

    def append() -> None:
        with note.open("a", encoding="utf-8") as fh:  # a writer appends right behind the read
            fh.write("more\n")

    after_the_next_read(monkeypatch, append)
    watcher.mark("inbox/jay/2026-09-27-race.md")
    assert await watcher.settle(force=True) == 0
    assert await watcher.settle(force=True) == 1
    assert [r.content for r in producer.sent] == [b"# v1\nmore\n"]


async def test_a_renamed_folder_deletes_the_old_paths_and_publishes_the_new_ones(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    watcher, producer, ledger, _m = parts
    for name in ("a", "b"):
        write_old(root / f"inbox/jay/2026-09-27-{name}.md", f"# {name}\n")
    assert await watcher.scan() == 2
    (root / "inbox/jay").rename(root / "inbox/jay-archive")
    watcher.mark_tree("inbox/jay")  # what _watch does for the two folder events
    watcher.mark_tree("inbox/jay-archive")
    assert await watcher.settle(force=True) == 4
    deleted = sorted(r.path for r in producer.sent if r.deleted)
    assert deleted == ["inbox/jay/2026-09-27-a.md", "inbox/jay/2026-09-27-b.md"]
    assert ledger.paths() == {"inbox/jay-archive/2026-09-27-a.md", "inbox/jay-archive/2026-09-27-b.md"}


async def test_a_note_replaced_by_a_folder_of_its_name_is_deleted_at_the_folder_s_event_and_back(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    # The event named the folder, whose walk lists what is under it only: the note stayed in the briefings until
    # the next rescan (a minute by default), beside the notes now under its name.
    watcher, producer, ledger, _m = parts
    note = "inbox/jay/2026-09-27-a.md"
    write_old(root / note, "# a\n")
    assert await watcher.scan() == 1
    (root / note).unlink()
    (root / note).mkdir()
    write_old(root / note / "inside.md", "# inside\n")
    watcher.mark_tree(note)  # what _watch does for the folder's event
    assert await watcher.settle(force=True) == 2
    assert [(r.path, r.deleted) for r in producer.sent[1:]] == [(note, True), (f"{note}/inside.md", False)]
    assert ledger.paths() == {f"{note}/inside.md"}
    # And back: the folder's note deleted, the note published again.
    (root / note / "inside.md").unlink()
    (root / note).rmdir()
    write_old(root / note, "# a again\n")
    watcher.mark(note)
    watcher.mark(f"{note}/inside.md")
    assert await watcher.settle(force=True) == 2
    assert ledger.paths() == {note}


async def test_a_note_read_under_a_bad_name_s_key_before_the_upgrade_is_deleted_not_listed_twice(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path
) -> None:
    # Until 2026-12-07 a valid `a\xff.md` (typed with a backslash) was read under the key of `a<0xff>.md` beside
    # it. Keyed apart now, its note was published again at `a\\xff.md` and the old key only refused: its old note
    # stayed current there, so the same note was a source twice.
    watcher, producer, ledger, _m = parts
    old_key = "inbox/jay/2026-12-07-a\\xff.md"
    write_old(root / old_key, "# look-alike\n")  # the valid name: a real backslash
    bad = os.fsencode(root) + b"/inbox/jay/2026-12-07-a\xff.md"
    os.close(os.open(bad, os.O_CREAT | os.O_WRONLY))
    digest = hashlib.sha256(b"# look-alike\n").hexdigest()
    ledger.acknowledge(old_key, 13, 1.0, digest)  # the row the old release left: the look-alike read there
    assert await watcher.scan() + await watcher.drain() == 3
    said = [(r.path, r.deleted, r.refused_code) for r in producer.sent]
    assert said[0] == ("inbox/jay/2026-12-07-a\\\\xff.md", False, None)  # the look-alike at its own key
    # Its old note deleted, then the file beside it refused under that key.
    assert said[1:] == [(old_key, True, None), (old_key, False, "bad_name")]
    assert await watcher.scan() + await watcher.drain() == 0


async def test_a_symlink_keyed_escaped_is_said_to_point_where_it_points(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Its target was read at the key (`a\\xff.md`): a symlink literally so named answered for it, or none did.
    watcher, _producer, _ledger, _m = parts
    os.symlink("/etc/hostname", root / "inbox/jay/a\\xff.md")
    os.symlink("/etc/passwd", root / "inbox/jay/a\\\\xff.md")
    caplog.set_level(logging.WARNING)
    assert await watcher.scan() + await watcher.drain() == 2
    said = sorted(r.getMessage() for r in caplog.records if "is a symlink to" in r.getMessage())
    assert said == [
        "inbox/jay/a\\\\\\\\xff.md is a symlink to /etc/passwd",
        "inbox/jay/a\\\\xff.md is a symlink to /etc/hostname",
    ]


async def test_a_scan_survives_files_vanishing_under_it(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher, producer, _ledger, _m = parts
    gone = root_files.Entry("inbox/jay/2026-09-27-gone.md", 5, 1.0)  # listed, then deleted before it is read
    monkeypatch.setattr(
        root_files, "list_folder", lambda root, rel: ([gone], []) if rel == "inbox" else ([], [])
    )
    assert await watcher.scan() + await watcher.drain() == 0
    assert producer.sent == []


def test_hidden_and_temporary_names_are_not_watched(parts: tuple[Any, ...], root: Path) -> None:
    watcher = parts[0]
    for rel in ("inbox/jay/.x.md.swp", "inbox/jay/x.md.tmp", "inbox/.obsidian/cache.md", "other/x.md"):
        assert watcher._rel(root / rel) is None
    assert watcher._rel(root / "inbox/jay/2026-09-27-x.md") == "inbox/jay/2026-09-27-x.md"


class PoisonedProducer(FakeProducer):
    """Refuses every send, as aiokafka's idempotent producer does once a batch expired mid-outage."""

    stopped = False

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
        raise OutOfOrderSequenceNumber()

    async def stop(self) -> None:
        self.stopped = True


async def test_a_producer_whose_send_failed_is_replaced_by_a_fresh_one(root: Path, tmp_path: Path) -> None:
    s = Settings(root=root, state_dir=tmp_path / "state", kafka=KafkaSettings(bootstrap="127.0.0.1:9"))
    poisoned, fresh, ledger, m = PoisonedProducer(), FakeProducer(), Ledger(s.ledger_file), WatcherMetrics()
    renewals: list[float] = []
    clock = ManualClock(datetime.fromtimestamp(1000.0, UTC))

    async def renew() -> FakeProducer:
        renewals.append(clock.now().timestamp())
        if len(renewals) == 1:
            raise KafkaConnectionError("broker still away")
        return fresh

    watcher = Watcher(s, poisoned, ledger, m, clock=clock, renew=renew)
    write_old(root / "inbox/jay/2026-09-27-a.md", "# a\n")
    watcher.mark("inbox/jay/2026-09-27-a.md")
    assert await watcher.settle(force=True) == 0  # OutOfOrderSequenceNumber: the file stays pending
    assert m.registry.get_sample_value("predigest_kafka_up") == 0
    assert await watcher.settle(force=True) == 0  # the first renewal fails: the broker is still away
    assert await watcher.settle(force=True) == 0  # and the next waits a second
    assert renewals == [1000.0]
    clock.advance(1.5)
    assert await watcher.settle(force=True) == 1
    assert watcher.producer is fresh and poisoned.stopped
    assert [r.path for r in fresh.sent] == ["inbox/jay/2026-09-27-a.md"]
    assert ledger.get("inbox/jay/2026-09-27-a.md") is not None
    ledger.close()


class _Marking(Watcher):
    """A watcher that keeps the paths its events marked: a test waits for watchfiles' event, not for a sleep."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.marked: list[str] = []

    def mark(
        self, rel: str, *, since: float | None = None, complete: bool = False, urgent: bool = True
    ) -> None:
        self.marked.append(rel)
        super().mark(rel, since=since, complete=complete, urgent=urgent)

    @property
    def pending(self) -> int:
        return len(self._quiet)


async def test_a_file_renamed_into_place_goes_at_once_one_written_in_place_waits_to_be_quiet(
    root: Path, tmp_path: Path
) -> None:
    # The quiet period runs on the injected clock, which only the test moves: the renamed files go out while it
    # stands still. (On the wall clock they had to go within 0.3 s, which a loaded machine outlasts.)
    s = Settings(
        root=root,
        state_dir=tmp_path / "state",
        out_dir=tmp_path / "out",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        quiet_seconds=0.5,
    )
    clock, producer, ledger = ManualClock(datetime.now(UTC)), FakeProducer(), Ledger(s.ledger_file)
    watcher = _Marking(s, producer, ledger, WatcherMetrics(), clock=clock)
    renamed = ["inbox/jay/2026-09-27-1000-renamed.md", "inbox/jay/sub/2026-09-27-1001-deeper.md"]
    in_place = "inbox/jay/2026-09-27-1002-in-place.md"
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        await async_wait_for(lambda: watcher.scanned, 10, "the startup scan")  # the inotify watches are up
        (root / "inbox/jay/sub").mkdir()  # a folder made later is watched too
        await asyncio.sleep(0.1)  # the loop reads the folder's creation (queued already) and watches it
        for rel in renamed:
            tmp = root / rel.replace("2026", ".2026", 1)
            tmp.write_text(f"# {rel}\n", encoding="utf-8")
            os.replace(tmp, root / rel)
        (root / in_place).write_text("# half", encoding="utf-8")
        await async_wait_for(lambda: len(producer.sent) >= 2, 10, "the renamed files", interval=0.01)
        assert sorted(r.path for r in producer.sent) == renamed
        await async_wait_for(lambda: in_place in watcher.marked, 10, "the event of the file written in place")
        # The loop's ticks (every 0.1 s) look at it: not quiet while the clock stands.
        await asyncio.sleep(0.3)
        assert len(producer.sent) == 2
        clock.advance(0.5)
        await async_wait_for(lambda: len(producer.sent) >= 3, 10, "the file written in place", interval=0.01)
        assert producer.sent[2].path == in_place
        # watchfiles' own events for the renamed files, quiet now too, publish nothing again
        await async_wait_for(
            lambda: all(watcher.marked.count(rel) >= 2 for rel in renamed), 10, "watchfiles' events"
        )
        clock.advance(0.5)
        await async_wait_for(lambda: watcher.pending == 0, 10, "the events settled")
        assert len(producer.sent) == 3
    finally:
        stop.set()
        await task
        ledger.close()


async def test_a_ledger_write_refused_is_counted_and_the_watcher_goes_on_until_it_is_written(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, tmp_path: Path
) -> None:
    watcher, producer, _ledger, m = parts
    other = duckdb.connect(str(tmp_path / "state" / "watcher-ledger.duckdb"))
    other.execute(
        "ALTER TABLE ledger ALTER sha256 TYPE INTEGER"
    )  # a digest no longer fits: every write fails
    failures = "predigest_ledger_write_failures_total"
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        write_old(root / "inbox/jay/2026-09-27-1000-first.md", "# first")
        await async_wait_for(lambda: (m.registry.get_sample_value(failures) or 0) >= 1, 5, "a refused flush")
        write_old(root / "inbox/jay/2026-09-27-1001-second.md", "# second")
        await async_wait_for(lambda: len(producer.sent) == 2, 5, "the next file, published all the same")
        other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
        await async_wait_for(
            lambda: other.execute("SELECT count(*) FROM ledger").fetchone() == (2,), 5, "both rows written"
        )
        assert not task.done()
    finally:
        stop.set()
        await task
        other.close()


async def test_files_acknowledged_while_the_ledger_is_refused_are_published_and_the_watcher_goes_on(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, tmp_path: Path
) -> None:
    # Before: an acknowledgement after a refused flush's retry time flushed the ledger itself, inside the
    # publish: its LedgerWriteError ended the watcher at the next file published during the refusal.
    watcher, producer, _ledger, m = parts
    other = duckdb.connect(str(tmp_path / "state" / "watcher-ledger.duckdb"))
    other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")  # every write fails
    failures = "predigest_ledger_write_failures_total"
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        for i in range(40):  # a steady stream of notes across several retries of the refused flush
            write_old(root / f"inbox/jay/2026-09-27-{1000 + i}-note.md", f"# note {i}")
            await asyncio.sleep(0.08)
        await async_wait_for(lambda: len(producer.sent) == 40 or task.done(), 10, "every note published")
        assert not task.done() and len(producer.sent) == 40
        assert (m.registry.get_sample_value(failures) or 0) >= 2
        other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
        await async_wait_for(
            lambda: other.execute("SELECT count(*) FROM ledger").fetchone() == (40,), 5, "every row written"
        )
    finally:
        stop.set()
        other.execute("ALTER TABLE ledger ALTER sha256 TYPE VARCHAR")
        await asyncio.gather(task, return_exceptions=True)
        other.close()


async def test_a_note_replaced_while_it_is_read_is_read_again_not_published_from_the_old_file(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher, producer, _ledger, _m = parts
    note = root / "inbox/jay/2026-09-27-swap.md"
    note.write_text("# old\n", encoding="utf-8")
    os.utime(note, (1_000_000_000, 1_000_000_000))

    # The old file read whole from its descriptor, a writer renames the new version over it.
    def replace() -> None:
        (root / "inbox/jay/.swap.tmp").write_text("# new, longer\n", encoding="utf-8")
        os.replace(root / "inbox/jay/.swap.tmp", note)

    after_the_next_read(monkeypatch, replace)
    watcher.mark("inbox/jay/2026-09-27-swap.md")
    assert await watcher.settle(force=True) == 0
    assert await watcher.settle(force=True) == 1
    assert [r.content for r in producer.sent] == [b"# new, longer\n"]


async def test_a_settle_opens_a_note_s_folder_once_to_read_it_and_once_for_all_their_stats(
    parts: tuple[Watcher, FakeProducer, Ledger, WatcherMetrics], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each note's stat and its check after the read opened the root and every folder on the way anew: three opens
    # each, twice a note, where its read opens them once (a 100k first start: ~40 % more watcher CPU, watch44).
    watcher, producer, _ledger, _m = parts
    for i in range(30):
        write_old(root / f"inbox/jay/2026-09-27-n{i}.md", f"# note {i}\n")
        watcher.mark(f"inbox/jay/2026-09-27-n{i}.md")
    opened = counting_opens(monkeypatch)
    assert await watcher.settle(force=True) == 30
    assert len(producer.sent) == 30
    assert opened.count("jay") == 30 + 1  # each read's, and the settle's stats
