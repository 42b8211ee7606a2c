"""The root's stats with no symlinked folder followed on the way: many paths at once answer as each would alone,
with each folder opened once for all of them."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from processors.root_paths import fs_rel
from streams import root_stats
from tests.streams.test_root_files import Swapper
from tests.streams.watcher_support import counting_opens


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for writer in ("jay", "tom"):
        (tmp_path / "root/inbox" / writer).mkdir(parents=True)
        for i in range(3):
            (tmp_path / "root/inbox" / writer / f"{i}.md").write_text(f"{writer} {i}", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x.md").write_bytes(b"s" * 7777)
    os.symlink(tmp_path / "outside", tmp_path / "root/inbox/linked")
    (tmp_path / "root/inbox/tom/plain").write_text("a file where a folder is looked for", encoding="utf-8")
    return tmp_path / "root"


def _own(st: os.stat_result | None) -> tuple[int, float, int] | None:
    return None if st is None else (st.st_size, st.st_mtime, st.st_mode)


def test_many_paths_at_once_answer_as_each_alone_a_link_on_the_way_with_its_own_stat(root: Path) -> None:
    rels = [
        "inbox/jay/0.md",
        "inbox/linked/x.md",  # under a symlinked folder: the link's own stat
        "inbox/tom/2.md",
        "inbox/linked/absent.md",
        "inbox/jay/absent.md",
        "inbox/absent/0.md",
        "inbox/tom/plain/0.md",  # a file where a folder is: nothing
        "inbox/jay/../tom/0.md",
        "inbox/jay/",
        "inbox",
        "inbox/jay/1.md",
    ]
    many = [_own(st) for st in root_stats.stat_many(root, rels)]
    assert many == [_own(root_stats.stat_own(root, rel)) for rel in rels]
    link = os.lstat(root / "inbox/linked")
    assert many[1] == many[3] == (link.st_size, link.st_mtime, link.st_mode)
    assert many[0] == _own(os.lstat(root / "inbox/jay/0.md"))
    assert many[4:9] == [None] * 5


def test_a_folder_is_opened_once_for_all_the_paths_in_it(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Opened again for each path, the root and its folders were three opens a note at every look: a rescan in a
    # 100k first start looks at every note not yet acknowledged, and the watcher's CPU rose 40 % (watch44).
    rels = [f"inbox/{w}/{i}.md" for i in range(3) for w in ("jay", "tom")]
    opened = counting_opens(monkeypatch)
    stats = root_stats.stat_many(root, rels)
    assert all(st is not None for st in stats)
    assert sorted(opened) == sorted([str(root), "inbox", "jay", "inbox", "tom"])


def test_a_folder_swapped_for_a_symlink_while_its_paths_are_stat_ed_gives_nothing_of_the_outside(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The folder is opened once for its paths: one swapped for a link to outside once it is opened has its paths
    # stat'ed in the folder as it was (inside the root), never through the link.
    (tmp_path / "outside/0.md").write_bytes(b"s" * 7777)
    inside = os.lstat(root / "inbox/jay/0.md")
    real = os.open

    def swapping(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real(path, flags, *args, **kwargs)
        if path == "jay":
            os.rename(root / "inbox/jay", root / "inbox/jay.old")
            os.symlink(tmp_path / "outside", root / "inbox/jay")
        return fd

    monkeypatch.setattr(os, "open", swapping)
    first, absent = root_stats.stat_many(root, ["inbox/jay/0.md", "inbox/jay/x.md"])
    assert _own(first) == _own(inside) and absent is None  # outside/x.md exists; not seen
    link = os.lstat(root / "inbox/jay")
    assert _own(root_stats.stat_own(root, "inbox/jay/0.md")) == _own(link)  # the next look: the link's own


# Every kind of entry at every depth: a link to outside, to inside and to a file, a FIFO, a file where a folder is
# looked for, a folder whose name is not UTF-8 (keyed escaped), the watched top folder itself a link.
_PARTS = [
    "inbox",
    "living",
    "jay",
    "deep",
    "er",
    "out",
    "in",
    "file",
    "pipe",
    "a.md",
    "a-link.md",
    "absent",
    "\\xff",
    "..",
    ".",
    "",
]


@pytest.fixture(scope="module")
def every_depth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("every-depth")
    root = base / "root"
    for folder in ("inbox", "inbox/jay", "inbox/jay/deep", "inbox/jay/deep/er", os.fsdecode(b"inbox/\xff")):
        for where in (root / folder, base / "outside" / folder.removeprefix("inbox").lstrip("/")):
            where.mkdir(parents=True, exist_ok=True)
            (where / "a.md").write_bytes(b"x" * (len(folder) + len(where.parts)))
            (where / "file").write_bytes(b"y" * 777)
    for folder in ("inbox", "inbox/jay", "inbox/jay/deep", "inbox/jay/deep/er"):
        os.symlink(base / "outside", root / folder / "out")
        os.symlink(root / "inbox/jay", root / folder / "in")
        os.mkfifo(root / folder / "pipe")
    os.symlink(base / "outside/jay/a.md", root / "inbox/jay/deep/a-link.md")
    os.symlink(base / "outside", root / "living")
    return root


def _reference(root: Path, rel: str) -> tuple[int, float, int] | None:
    """stat_own by names, no descriptor held: each folder on the way lstat'ed, the first link met answering."""
    parts = fs_rel(rel).split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    at = root
    for part in parts[:-1]:
        at = at / part
        try:
            seen = os.lstat(at)
        except OSError:
            return None
        if stat.S_ISLNK(seen.st_mode):
            return _own(seen)
        if not stat.S_ISDIR(seen.st_mode):
            return None
    try:
        return _own(os.lstat(at / parts[-1]))
    except OSError:
        return None


@settings(max_examples=500, deadline=None)
@given(rels=st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=5).map("/".join), max_size=12))
@example(rels=["/inbox", "/living", "/inbox/a.md"])  # found at ~3000 examples: the root's own entry answered
def test_many_paths_answer_as_a_walk_of_lstats_with_links_at_every_depth(
    every_depth: Path, rels: list[str]
) -> None:
    # Nothing of what a link leads to (outside/ holds files of the same names, other sizes) and nothing above the
    # root: a path with an empty, `.` or `..` part is none, as it was for stat_own before paths were grouped.
    many = root_stats.stat_many(every_depth, rels)
    assert [_own(st) for st in many] == [_reference(every_depth, rel) for rel in rels]


@pytest.mark.timeout(60)
def test_a_folder_swapped_with_a_link_out_again_and_again_gives_nothing_of_the_outside(
    root: Path, tmp_path: Path
) -> None:
    # A real race, not a hook: renameat2 swaps jay's folder with a link to outside between any two system calls
    # of a batch (its open of a folder, its stats in it). Outside, every name in jay has a file of 7777 bytes.
    for i in range(3):
        (tmp_path / f"outside/{i}.md").write_bytes(b"s" * 7777)
    os.symlink(tmp_path / "outside", root / "inbox/.out")
    link = os.lstat(root / "inbox/.out")
    inside = {os.lstat(root / f"inbox/jay/{i}.md").st_size for i in range(3)}
    rels = [f"inbox/jay/{i}.md" for i in range(3)] * 20
    sizes: set[int | None] = set()
    with Swapper(root / "inbox/jay", [root / "inbox/.out"]) as swapper:
        for _ in range(2000):
            sizes |= {None if st is None else st.st_size for st in root_stats.stat_many(root, rels)}
            if link.st_size in sizes and inside <= sizes and swapper.swaps > 100:
                break
    assert link.st_size in sizes and inside <= sizes  # the race was met: both sides answered
    assert sizes <= {*inside, link.st_size, None}  # never 7777
