"""The rescans' listing: a folder whose mtime did not change is not listed again, yet nothing is missed for
long: a new, renamed or deleted file changes its folder's mtime, and the full pass finds edits in place."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from processors.quiet import Stat
from streams import root_files, root_stats
from streams.tree_listing import TreeListing
from tests.streams.watcher_support import counting_opens

OLD = time.time() - 3600


def _write(root: Path, rel: str, text: str, when: float = OLD) -> Stat:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (when, when))
    st = path.lstat()
    return st.st_size, st.st_mtime


def _age_folders(root: Path) -> None:
    for folder in [root / "inbox", *(root / "inbox").rglob("*")]:
        if folder.is_dir():
            os.utime(folder, (OLD, OLD))


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, Stat]]:
    root = tmp_path / "root"
    known = {rel: _write(root, rel, rel) for rel in ("inbox/jay/a.md", "inbox/jay/b.md", "inbox/tom/c.md")}
    _age_folders(root)
    return root, known


def test_unchanged_folders_are_not_listed_again_and_nothing_is_reported(
    tree: tuple[Path, dict[str, Stat]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, known = tree
    listing = TreeListing(root, ("inbox", "living"), full_every=10)
    first = listing.changes(known)
    assert (first.changed, first.gone, first.files, first.full) == ([], [], 3, True)
    listed: list[str] = []
    real = root_files.list_folder

    def counted(r: Path, rel: str) -> tuple[list[root_files.Entry], list[str]]:
        listed.append(rel)
        return real(r, rel)

    monkeypatch.setattr(root_files, "list_folder", counted)
    again = listing.changes(known)
    assert (again.changed, again.gone, again.files, again.listed_folders, again.full) == ([], [], 3, 0, False)
    assert listed == []


def test_new_and_deleted_files_change_their_folder_and_are_found_at_once(
    tree: tuple[Path, dict[str, Stat]],
) -> None:
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=10)
    listing.changes(known)
    new = _write(root, "inbox/jay/new.md", "new")
    (root / "inbox/tom/c.md").unlink()
    found = listing.changes(known)
    assert found.changed == [("inbox/jay/new.md", new)] and found.gone == ["inbox/tom/c.md"]
    assert found.listed_folders == 2 and not found.full  # jay and tom; inbox itself is unchanged


def test_an_edit_in_place_is_found_by_the_full_pass(tree: tuple[Path, dict[str, Stat]]) -> None:
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=3)
    listing.changes(known)
    _age_folders(root)
    edited = _write(root, "inbox/jay/a.md", "edited in place, no event", when=OLD + 60)
    _age_folders(root)  # an edit in place does not touch the folder
    assert listing.changes(known).changed == []  # not looked at: its folder is unchanged
    assert listing.changes(known).changed == []
    full = listing.changes(known)
    assert full.full and full.changed == [("inbox/jay/a.md", edited)]


def test_a_file_of_an_unchanged_folder_that_differs_from_the_ledger_is_looked_at_itself(
    tree: tuple[Path, dict[str, Stat]],
) -> None:
    # Events published an edit in place, so the ledger has the new stat and the cached listing the old one: the
    # file's own lstat settles it, and the cache learns it, rather than reporting the file at every rescan.
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=10)
    listing.changes(known)
    edited = _write(root, "inbox/jay/a.md", "edited", when=OLD + 60)
    _age_folders(root)
    known = {**known, "inbox/jay/a.md": edited}
    assert listing.changes(known).changed == []
    assert listing.changes(known).changed == []


def test_a_folder_changed_just_now_is_listed_again_next_time(tree: tuple[Path, dict[str, Stat]]) -> None:
    # Its mtime may tick once for two changes a millisecond apart: the second would go unseen.
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=10)
    _write(root, "inbox/jay/new.md", "new")  # the folder's mtime is now
    assert [rel for rel, _ in listing.changes(known).changed] == ["inbox/jay/new.md"]
    assert listing.changes(known).listed_folders == 1  # jay again; the aged ones are trusted


def test_a_rescan_looks_at_the_files_not_yet_in_the_ledger_with_their_folder_opened_once(
    tree: tuple[Path, dict[str, Stat]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # During a first start every note not yet acknowledged is a file of an unchanged folder that differs from the
    # ledger, at every rescan: its own stat opened the root and each folder on its way again, three opens a note
    # (100 000 notes, a rescan every 3 s: the watcher's CPU over a 100k first start rose by ~40 %, watch44).
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=10)
    new = _forty_new_in_an_aged_folder(root)
    assert sorted(listing.changes(known).changed) == sorted(new.items())
    opened = counting_opens(monkeypatch)
    again = listing.changes(known)  # jay is unchanged: not listed, its new files looked at themselves
    assert sorted(again.changed) == sorted(new.items()) and again.listed_folders == 0
    assert opened.count("jay") == 1  # not once per new file


def test_a_rescan_leaves_the_files_pending_at_the_stat_listed_to_their_settle_and_looks_at_the_rest(
    tree: tuple[Path, dict[str, Stat]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # During a first start every note not yet acknowledged is pending in the watcher at the stat its unchanged
    # folder's listing has: re-stat'ing all of them at every rescan (0.3-0.5 million a 100k start) found nothing
    # its settle's own stat would not (rescan45). One pending at another stat (a settle saw it change) is looked at.
    root, known = tree
    listing = TreeListing(root, ("inbox",), full_every=10)
    new = _forty_new_in_an_aged_folder(root)
    assert sorted(listing.changes(known, pending=new).changed) == sorted(new.items())  # jay listed: all new
    pending = {**new, "inbox/jay/n0.md": (0, 0.0)}
    opened, stats = counting_opens(monkeypatch), _counting_stats(monkeypatch)
    again = listing.changes(known, pending=pending)
    assert again.changed == [("inbox/jay/n0.md", new["inbox/jay/n0.md"])] and again.listed_folders == 0
    assert [rel for rel in stats if rel.endswith(".md")] == [
        "inbox/jay/n0.md"
    ]  # not 40 (the folders' own aside)
    assert opened.count("jay") == 1


def _counting_stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path `root_stats.stat_many` is asked for from now on, folders too (the real call still made)."""
    asked: list[str] = []
    real = root_stats.stat_many

    def counted(root: Path, rels: Sequence[str]) -> list[os.stat_result | None]:
        asked.extend(rels)
        return real(root, rels)

    monkeypatch.setattr(root_stats, "stat_many", counted)
    return asked


def _forty_new_in_an_aged_folder(root: Path) -> dict[str, Stat]:
    """Forty notes written into `inbox/jay`, its folders then aged (trusted by the next listing): their stats."""
    new = {rel: _write(root, rel, rel) for rel in (f"inbox/jay/n{i}.md" for i in range(40))}
    _age_folders(root)
    return new
