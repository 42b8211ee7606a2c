"""Reading the root: links never followed, a file checked on its descriptor and read from it; a symlink or a FIFO
swapped in while the watcher reads leaks nothing and blocks nothing."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from processors.root_paths import BAD_FOLDER_TEXT, REFUSAL_TEXT
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import root_files
from streams.root_files import Folder, Missing, Refused, Regular, read_file, read_many, walk, walk_sorted
from streams.settings import KafkaSettings, Settings
from streams.watcher import Watcher
from tests.streams.watcher_support import FakeProducer

SECRET = b"export OPENAI_API_KEY=sk-not-for-briefings"
NOTE = b"# vLLM note\nKV cache serving.\n"
RENAME_EXCHANGE = 2


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root/inbox/jay").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.md").write_bytes(SECRET)
    (tmp_path / "outside/note.md").write_bytes(SECRET)  # what a symlinked folder would lead to
    return tmp_path / "root"


def test_a_regular_file_is_read_and_everything_else_refused_without_being_opened_for_long(
    root: Path, tmp_path: Path
) -> None:
    jay = root / "inbox/jay"
    (jay / "note.md").write_bytes(NOTE)
    os.symlink(tmp_path / "outside/secret.md", jay / "leak.md")
    os.symlink(jay / "note.md", jay / "alias.md")  # inside the root: refused all the same
    os.symlink(tmp_path / "outside", root / "inbox/tom")
    os.mkfifo(jay / "pipe.md")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(jay / "sock.md"))
        outcomes = {
            rel: read_file(root, rel, 1024)
            for rel in (
                "inbox/jay/note.md",
                "inbox/jay/leak.md",
                "inbox/jay/alias.md",
                "inbox/tom",
                "inbox/tom/note.md",
                "inbox/jay/pipe.md",
                "inbox/jay/sock.md",
                "inbox/jay",
                "inbox/jay/gone.md",
                "inbox/jay/note.md/below",
                "inbox/../../outside/secret.md",
            )
        }
    assert outcomes.pop("inbox/jay/note.md") == Regular(len(NOTE), (jay / "note.md").stat().st_mtime, NOTE)
    reasons = {rel: o.reason for rel, o in outcomes.items() if isinstance(o, Refused)}
    assert reasons == {
        "inbox/jay/leak.md": "symlink",
        "inbox/jay/alias.md": "symlink",
        "inbox/tom": "symlink",
        "inbox/tom/note.md": "outside",
        "inbox/jay/pipe.md": "special",
        "inbox/jay/sock.md": "special",
        "inbox/../../outside/secret.md": "outside",
    }
    assert outcomes["inbox/jay"] == Folder()
    assert outcomes["inbox/jay/gone.md"] == Missing()
    assert outcomes["inbox/jay/note.md/below"] == Missing()


def test_the_backfill_reads_paths_in_a_row_as_each_would_be_read_alone(root: Path, tmp_path: Path) -> None:
    # read_many opens a folder once for the paths right in it that follow one another: the same outcomes, and
    # no descriptor left open, also when the reader stops half way.
    jay = root / "inbox/jay"
    for name in ("a.md", "b.md", "c.md"):
        (jay / name).write_bytes(NOTE + name.encode())
    (root / "top.md").write_bytes(NOTE)
    os.symlink(tmp_path / "outside", root / "inbox/tom")
    os.symlink(tmp_path / "outside/secret.md", jay / "leak.md")
    rels = [
        "inbox/jay/a.md",
        "inbox/jay/b.md",
        "inbox/jay/leak.md",
        "inbox/tom/note.md",
        "inbox/tom/secret.md",
        "inbox/gone/x.md",
        "inbox/gone/y.md",
        "inbox/jay/c.md",
        "top.md",
        "inbox/../../outside/secret.md",
        "inbox/jay/a.md",
    ]
    fds = len(os.listdir("/proc/self/fd"))
    assert list(root_files.read_many(root, rels, 1024)) == [read_file(root, rel, 1024) for rel in rels]
    halfway = root_files.read_many(root, rels, 1024)
    assert next(halfway) == read_file(root, rels[0], 1024)
    halfway.close()
    assert len(os.listdir("/proc/self/fd")) == fds


def test_a_folder_swapped_between_the_backfill_s_reads_of_its_files_leaks_nothing(
    root: Path, tmp_path: Path
) -> None:
    # read_many keeps a folder open for its next files: a folder swapped for a link to outside meanwhile is read
    # through the folder it opened (the note as it was), never through the link; the next folder, opened anew from
    # the root, is refused as read_file refuses it.
    (root / "inbox/tom").mkdir()
    for rel in ("inbox/jay/a.md", "inbox/jay/note.md", "inbox/tom/note.md", "inbox/tom/z.md"):
        (root / rel).write_bytes(NOTE)
    reads = root_files.read_many(
        root, ["inbox/jay/a.md", "inbox/jay/note.md", "inbox/tom/note.md", "inbox/tom/z.md"], 1024
    )
    assert next(reads) == Regular(len(NOTE), (root / "inbox/jay/a.md").stat().st_mtime, NOTE)
    for folder in ("inbox/jay", "inbox/tom"):
        os.rename(root / folder, root / f"{folder}.old")
        os.symlink(tmp_path / "outside", root / folder)
    later = list(reads)
    assert isinstance(later[0], Regular) and later[0].data == NOTE
    assert (
        later[1:]
        == [Refused("outside", REFUSAL_TEXT["outside"], *_own(root / "inbox/tom"))] * 2
        == [read_file(root, rel, 1024) for rel in ("inbox/tom/note.md", "inbox/tom/z.md")]
    )


def test_a_path_that_cannot_be_opened_leaves_no_descriptor_open_and_closes_none_twice(root: Path) -> None:
    # A NUL in a folder's name raises ValueError, not OSError, from os.open: every descriptor opened on the way is
    # still closed once, and the folder read_many held is not closed a second time (by then another thread's).
    (root / "inbox/jay/a.md").write_bytes(NOTE)
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ValueError, match="null"):
        read_file(root, "inbox/j\x00y/a.md", 1024)
    with pytest.raises(ValueError, match="null"):
        list(root_files.read_many(root, ["inbox/jay/a.md", "inbox/j\x00y/a.md"], 1024))
    assert len(os.listdir("/proc/self/fd")) == fds


def test_an_oversized_file_is_not_read_and_one_at_the_limit_is(root: Path) -> None:
    (root / "inbox/jay/big.md").write_bytes(b"x" * 101)
    (root / "inbox/jay/edge.md").write_bytes(b"x" * 100)
    big = read_file(root, "inbox/jay/big.md", 100)
    assert isinstance(big, Regular) and (big.size, big.data) == (101, None)
    edge = read_file(root, "inbox/jay/edge.md", 100)
    assert isinstance(edge, Regular) and edge.data == b"x" * 100


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file whatever its mode")
def test_a_file_without_read_permission_is_refused_as_unreadable(root: Path) -> None:
    locked = root / "inbox/jay/locked.md"
    locked.write_bytes(NOTE)
    locked.chmod(0)
    refused = read_file(root, "inbox/jay/locked.md", 1024)
    assert isinstance(refused, Refused) and refused.reason == "unreadable"


def test_the_walk_lists_links_and_special_files_but_never_enters_a_linked_folder(
    root: Path, tmp_path: Path
) -> None:
    jay = root / "inbox/jay"
    (jay / "sub").mkdir()
    (jay / "sub/b.md").write_bytes(NOTE)
    (jay / "a.md").write_bytes(NOTE)
    (jay / ".a.md.swp").write_bytes(NOTE)
    os.symlink(tmp_path / "outside", jay / "elsewhere")
    os.mkfifo(jay / "pipe.md")
    rels = sorted(e.rel for e in walk(root, "inbox"))
    assert rels == ["inbox/jay/a.md", "inbox/jay/elsewhere", "inbox/jay/pipe.md", "inbox/jay/sub/b.md"]
    assert list(walk(root, "paper_cards")) == []  # not there: nothing


def test_a_root_reached_through_a_symlink_is_listed_and_read_as_its_target(
    root: Path, tmp_path: Path
) -> None:
    # Only links under the root are refused: a deployment may mount the root itself through one (`predigest check`
    # walks the configured root as it is given).
    linked = tmp_path / "mounted"
    os.symlink(root, linked)
    (root / "inbox/jay/sub").mkdir()
    (root / "inbox/jay/sub/a.md").write_bytes(NOTE)
    os.symlink(tmp_path, root / "inbox/jay/elsewhere")
    note = os.stat(root / "inbox/jay/sub/a.md")
    assert [e.rel for e in walk(linked, "inbox")] == ["inbox/jay/elsewhere", "inbox/jay/sub/a.md"]
    assert root_files.lstat(linked, "inbox/jay/sub/a.md") == (note.st_size, note.st_mtime)
    assert read_file(linked, "inbox/jay/sub/a.md", 1024) == Regular(note.st_size, note.st_mtime, NOTE)
    link = os.lstat(root / "inbox/jay/elsewhere")
    assert root_files.lstat(linked, "inbox/jay/elsewhere/x.md") == (link.st_size, link.st_mtime)


def _exchange() -> Callable[[Path, Path], None]:
    """renameat2(RENAME_EXCHANGE): the two names swap atomically, as the attacker of issue 16 did."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("no renameat2 in this libc")
    at_fdcwd = -100

    def exchange(a: Path, b: Path) -> None:
        if libc.renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")

    return exchange


class Swapper:
    """A thread that keeps swapping `target` with each of `others`, until stopped."""

    def __init__(self, target: Path, others: list[Path]) -> None:
        self.swaps = 0
        self._stop = threading.Event()
        exchange = _exchange()

        def run() -> None:
            while not self._stop.is_set():
                for other in others:
                    exchange(target, other)  # the other one is in place now …
                    exchange(target, other)  # … and the note is back
                    self.swaps += 2

        self._thread = threading.Thread(target=run, daemon=True)

    def __enter__(self) -> Swapper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@pytest.fixture
def swapped_note(root: Path, tmp_path: Path) -> Iterator[Swapper]:
    """inbox/jay/note.md swapped with a symlink to an outside secret and with a FIFO, in a loop."""
    jay = root / "inbox/jay"
    (jay / "note.md").write_bytes(NOTE)
    os.symlink(tmp_path / "outside/secret.md", jay / ".link")
    os.mkfifo(jay / ".fifo")
    with Swapper(jay / "note.md", [jay / ".link", jay / ".fifo"]) as swapper:
        yield swapper


@pytest.mark.timeout(60)
def test_a_symlink_or_fifo_swapped_in_while_reading_leaks_nothing_and_blocks_nothing(
    root: Path, swapped_note: Swapper
) -> None:
    seen: dict[str, int] = {}
    slowest = 0.0
    for _ in range(3000):
        started = time.monotonic()
        outcome = read_file(root, "inbox/jay/note.md", 1024)
        slowest = max(slowest, time.monotonic() - started)
        if isinstance(outcome, Regular):
            assert outcome.data == NOTE  # never the secret, never a mix
        kind = outcome.reason if isinstance(outcome, Refused) else type(outcome).__name__
        seen[kind] = seen.get(kind, 0) + 1
    assert swapped_note.swaps > 100, "the swapper ran"
    assert seen.get("Regular", 0) > 0 and set(seen) <= {"Regular", "symlink", "special", "Changed", "Missing"}
    assert slowest < 1.0


@pytest.mark.timeout(60)
def test_a_folder_swapped_for_a_symlinked_one_while_reading_leaks_nothing(root: Path, tmp_path: Path) -> None:
    (root / "inbox/jay/note.md").write_bytes(NOTE)
    os.symlink(tmp_path / "outside", root / "inbox/.jay")
    with Swapper(root / "inbox/jay", [root / "inbox/.jay"]) as swapper:
        outcomes = [read_file(root, "inbox/jay/note.md", 1024) for _ in range(3000)]
    assert swapper.swaps > 100
    assert all(o.data == NOTE for o in outcomes if isinstance(o, Regular))
    assert any(isinstance(o, Regular) for o in outcomes)
    assert {o.reason for o in outcomes if isinstance(o, Refused)} <= {"outside", "symlink"}


@pytest.mark.timeout(60)
def test_folders_swapped_for_symlinked_ones_while_the_backfill_reads_leak_nothing(
    root: Path, tmp_path: Path
) -> None:
    # read_many over a folder's files and the next folder's, while both are swapped with links to outside: a folder
    # is read through the descriptor opened without following links, or refused, never through a link.
    (root / "inbox/tom").mkdir()
    for folder in ("jay", "tom"):
        for name in ("a.md", "note.md"):
            (root / f"inbox/{folder}/{name}").write_bytes(NOTE)
        os.symlink(tmp_path / "outside", root / f"inbox/.{folder}")
    rels = ["inbox/jay/a.md", "inbox/jay/note.md", "inbox/tom/a.md", "inbox/tom/note.md"] * 500
    with (
        Swapper(root / "inbox/jay", [root / "inbox/.jay"]) as jay,
        Swapper(root / "inbox/tom", [root / "inbox/.tom"]) as tom,
    ):
        outcomes = list(root_files.read_many(root, rels, 1024))
    assert jay.swaps > 100 and tom.swaps > 100
    assert all(o.data == NOTE for o in outcomes if isinstance(o, Regular))
    assert any(isinstance(o, Regular) for o in outcomes)
    assert {o.reason for o in outcomes if isinstance(o, Refused)} <= {"outside", "symlink"}


@pytest.mark.timeout(60)
async def test_the_watcher_publishes_nothing_of_the_secret_while_the_note_is_swapped(
    root: Path, tmp_path: Path, swapped_note: Swapper
) -> None:
    s = Settings(root=root, state_dir=tmp_path / "state", kafka=KafkaSettings(bootstrap="127.0.0.1:9"))
    producer, ledger = FakeProducer(), Ledger(s.ledger_file)
    watcher = Watcher(s, producer, ledger, WatcherMetrics())
    try:
        deadline = time.monotonic() + 3
        rounds = 0
        while time.monotonic() < deadline:
            watcher.mark("inbox/jay/note.md")
            await asyncio.wait_for(watcher.settle(force=True), 1.0)  # a FIFO would block here for good
            rounds += 1
    finally:
        ledger.close()
    assert rounds > 20 and swapped_note.swaps > 100
    assert producer.sent, "the note itself was published"
    for raw in producer.sent:
        assert SECRET not in raw.content and "sk-not" not in (raw.refused or "")
        assert raw.content in (NOTE, b"")


def test_the_reader_is_the_one_module_that_opens_files_under_the_root() -> None:
    streams = Path(root_files.__file__).parent
    for module in ("watcher.py", "backfill.py"):
        text = (streams / module).read_text(encoding="utf-8")
        assert "read_bytes(" not in text and "open(" not in text and "is_file(" not in text, module


def test_a_name_that_is_not_utf8_is_listed_escaped_and_refused_unread(root: Path) -> None:
    base = os.fsencode(root)
    os.close(os.open(base + b"/inbox/jay/2026-12-07-\xff.md", os.O_CREAT | os.O_WRONLY))
    os.mkdir(base + b"/inbox/tom\xe9")  # a folder: entered, each file under it refused
    os.close(os.open(base + b"/inbox/tom\xe9/2026-12-07-x.md", os.O_CREAT | os.O_WRONLY))
    # A valid name that reads as a bad name's escape: keyed with its backslash doubled, read
    (root / "inbox/jay/2026-12-07-\\xfe.md").write_bytes(NOTE)
    rels = sorted(e.rel for e in walk(root, "inbox"))
    assert rels == [
        "inbox/jay/2026-12-07-\\\\xfe.md",
        "inbox/jay/2026-12-07-\\xff.md",
        "inbox/tom\\xe9/2026-12-07-x.md",
    ]
    assert sorted(e.rel for e in walk_sorted(root, "inbox")) == rels
    reads = list(read_many(root, rels, 1024))
    for rel, many in zip(rels[1:], reads[1:], strict=True):
        read = read_file(root, rel, 1024)
        assert isinstance(read, Refused) and read.reason == "bad_name", read
        assert many == read
        assert root_files.lstat(root, rel) is not None  # the rescans see it unchanged, not gone
    read = read_file(root, rels[0], 1024)
    assert isinstance(read, Regular) and read.data == NOTE and reads[0] == read
    assert isinstance(read_file(root, "inbox/tom\\xe9", 1024), Folder)  # its row until 2026-12-07: no file


def test_a_file_refused_for_its_folder_s_name_says_to_rename_the_folder(root: Path) -> None:
    # "has a name that is not valid UTF-8 … rename it" sent the writer to rename a file whose name was fine.
    base = os.fsencode(root)
    os.mkdir(base + b"/inbox/tom\xe9")
    for name in (b"2026-12-07-x.md", b"2026-12-07-\xff.md"):
        os.close(os.open(base + b"/inbox/tom\xe9/" + name, os.O_CREAT | os.O_WRONLY))
    os.close(os.open(base + b"/inbox/jay/2026-12-07-\xff.md", os.O_CREAT | os.O_WRONLY))
    said = {rel: read_file(root, rel, 1024) for rel in sorted(e.rel for e in walk(root, "inbox"))}
    assert {rel: (r.reason, r.detail) for rel, r in said.items() if isinstance(r, Refused)} == {
        "inbox/jay/2026-12-07-\\xff.md": ("bad_name", REFUSAL_TEXT["bad_name"]),
        "inbox/tom\\xe9/2026-12-07-\\xff.md": ("bad_name", BAD_FOLDER_TEXT),  # the folder first
        "inbox/tom\\xe9/2026-12-07-x.md": ("bad_name", BAD_FOLDER_TEXT),
    }


def test_a_folder_not_utf8_swapped_for_a_symlink_leaks_not_even_a_stat(root: Path, tmp_path: Path) -> None:
    # Its files' keys were looked up with lstat, which follows a symlinked folder on the way: an outside file's
    # size and time went out in the refusal (the same path through a folder of a valid name is "outside").
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/2026-12-07-x.md").write_bytes(b"x" * 4321)
    os.symlink(tmp_path / "elsewhere", os.fsencode(root) + b"/inbox/tom\xe9")
    read = read_file(root, "inbox/tom\\xe9/2026-12-07-x.md", 1024)
    link = os.fsencode(root) + b"/inbox/tom\xe9"
    assert isinstance(read, Refused), read
    assert (read.reason, read.size, read.mtime) == ("outside", *_own(link))
    [many] = read_many(root, ["inbox/tom\\xe9/2026-12-07-x.md"], 1024)
    assert many == read


def test_a_bad_name_under_a_folder_named_with_a_backslash_is_refused_not_missing(root: Path) -> None:
    (root / "inbox/C:\\jay").mkdir()
    os.close(os.open(os.fsencode(root) + b"/inbox/C:\\jay/2026-12-07-\xff.md", os.O_CREAT | os.O_WRONLY))
    [entry] = walk(root, "inbox/C:\\jay")
    assert entry.rel == "inbox/C:\\jay/2026-12-07-\\xff.md"
    read = read_file(root, entry.rel, 1024)
    # It was Missing: "vanished" at every rescan, and never in the briefing.
    assert isinstance(read, Refused) and read.reason == "bad_name", read
    assert root_files.lstat(root, entry.rel) == (entry.size, entry.mtime)


def _own(path: Path | bytes) -> tuple[int, float]:
    """The link's own size and time, not those of what it leads to."""
    st = os.lstat(path)
    return st.st_size, st.st_mtime


def test_a_path_under_a_symlinked_folder_has_the_link_s_own_stat_not_the_outside_file_s(
    root: Path, tmp_path: Path
) -> None:
    # lstat follows every folder on the way but the last part: an outside file's size and time were the path's.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/x.md").write_bytes(b"s" * 7777)
    os.utime(tmp_path / "elsewhere/x.md", (1_111_111_111, 1_111_111_111))
    os.symlink(tmp_path / "elsewhere", root / "inbox/tom")
    link = _own(root / "inbox/tom")
    assert root_files.lstat(root, "inbox/tom/x.md") == link == root_files.lstat(root, "inbox/tom/absent.md")
    assert read_file(root, "inbox/tom/x.md", 1024) == Refused("outside", REFUSAL_TEXT["outside"], *link)
    assert list(walk(root, "inbox/tom/x.md")) == [root_files.Entry("inbox/tom/x.md", *link)]
    assert root_files.list_folder(root, "inbox/tom") == ([], [])  # not listed through the link


def test_a_folder_swapped_for_a_symlink_during_the_backfill_s_walk_lists_nothing_beyond_it(
    root: Path, tmp_path: Path
) -> None:
    # The walk listed each folder by its name: a folder swapped for a link to outside after its parent was listed
    # was listed through the link, its outside files' names and stats walked as the root's.
    (tmp_path / "elsewhere/sub").mkdir(parents=True)
    (tmp_path / "elsewhere/sub/secret.md").write_bytes(b"s" * 7777)
    (root / "inbox/tom/sub").mkdir(parents=True)
    (root / "inbox/tom/a.md").write_bytes(NOTE)
    (root / "inbox/tom/sub/b.md").write_bytes(NOTE)
    walking = walk_sorted(root, "inbox/tom")
    assert next(walking).rel == "inbox/tom/a.md"
    os.rename(root / "inbox/tom", root / "inbox/tom.old")
    os.symlink(tmp_path / "elsewhere", root / "inbox/tom")
    assert list(walking) == []
