"""The watched tree as the watcher's rescans see it, listed again only where it changed.

Creating, deleting or renaming a file changes its folder's mtime; editing a file in place changes only the
file's. So most rescans look at each folder's mtime and list only the folders that changed (a few system calls
for 100,000 unchanged files, where listing them all took a second of CPU), and every `full_every`-th rescan
stats every file, for in-place edits whose events watchfiles dropped. A folder changed within the last
seconds is listed again next time too: its mtime can tick before a later change in the same granule.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from processors.quiet import Stat, changed_paths
from sinks.clock import epoch_seconds
from streams import root_files, root_stats

RACY_SECONDS = 2.0
_NONE_PENDING: Mapping[str, Stat] = MappingProxyType({})


@dataclass(frozen=True)
class _Folder:
    mtime_ns: int
    trusted: bool  # its mtime was older than RACY_SECONDS when it was listed
    files: dict[str, Stat]
    folders: tuple[str, ...]


@dataclass(frozen=True)
class Changes:
    """What a rescan found against the ledger, and how much it looked at."""

    changed: list[tuple[str, Stat]]
    gone: list[str]
    files: int
    listed_folders: int
    full: bool


class TreeListing:
    """Lists the watched folders under `root`, reusing the listing of every folder whose mtime is unchanged."""

    def __init__(
        self, root: Path, tops: Iterable[str], full_every: int, clock: Callable[[], float] = epoch_seconds
    ) -> None:
        self._root, self._tops, self._full_every, self._clock = root, tuple(tops), full_every, clock
        self._folders: dict[str, _Folder] = {}
        self._rescans = 0

    def changes(
        self, known: Mapping[str, Stat], full: bool = False, pending: Mapping[str, Stat] = _NONE_PENDING
    ) -> Changes:
        """The paths whose lstat differs from `known` (the ledger's), and the known paths gone (in a thread);
        `full`: every file stat'ed, not only those of changed folders (also every `full_every`-th time);
        `pending`: the paths already waiting to be read, at the stat last seen (not reported again at it)."""
        full = full or self._rescans % self._full_every == 0
        self._rescans += 1
        listing, cached, listed = self._list(full)
        changed, gone = changed_paths(listing, known)
        gone = self._not_same_link(gone, known)
        # A file of an unchanged folder that differs is looked at itself (all of them at once), unless it waits
        # at the stat listed: its settle stats it before reading it (a first start's notes not yet acknowledged,
        # 100 000 stats at every rescan otherwise). One rewritten since is seen by that stat.
        changed = [(rel, seen) for rel, seen in changed if not _waiting(rel, seen, cached, pending)]
        looked = [rel for rel, _ in changed if rel.rsplit("/", 1)[0] in cached]
        own = dict(zip(looked, root_stats.stat_many(self._root, looked), strict=True))
        confirmed = []
        for rel, seen in changed:
            if rel in own:
                st = own[rel]
                seen = (st.st_size, st.st_mtime) if st is not None else seen
                self._refresh(rel, seen)
                if known.get(rel) == seen:
                    continue
            confirmed.append((rel, seen))
        return Changes(confirmed, gone, len(listing), listed, full)

    def _list(self, full: bool) -> tuple[dict[str, Stat], set[str], int]:
        """(every file with its lstat, the folders not listed again (unchanged), how many folders were listed)."""
        listing: dict[str, Stat] = {}
        cached: set[str] = set()
        seen_folders: dict[str, _Folder] = {}
        listed = 0
        now = self._clock()
        stack = [top for top in reversed(self._tops)]
        while stack:
            rel = stack.pop()
            st = root_stats.stat_own(self._root, rel)  # no symlinked folder followed on the way
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                listing[rel] = (st.st_size, st.st_mtime)  # a top folder that is a file or a symlink: refused
                continue
            before = self._folders.get(rel)
            if not full and before is not None and before.trusted and before.mtime_ns == st.st_mtime_ns:
                folder = before
                cached.add(rel)
            else:
                files, folders = root_files.list_folder(self._root, rel)
                trusted = now - st.st_mtime > RACY_SECONDS
                folder = _Folder(
                    st.st_mtime_ns, trusted, {e.rel: (e.size, e.mtime) for e in files}, tuple(folders)
                )
                listed += 1
            seen_folders[rel] = folder
            listing.update(folder.files)
            stack.extend(reversed(folder.folders))
        self._folders = seen_folders  # folders gone since are forgotten
        return listing, cached, listed

    def _not_same_link(self, gone: list[str], known: Mapping[str, Stat]) -> list[str]:
        """A path under a symlinked folder is never listed: refused once with the link's stat, it is gone only once
        the link is (a new link, a new refusal), not at every rescan."""
        # Only a link's: any other path not listed (its folder unreadable, deleted mid-rescan) is looked at again.
        return [
            rel
            for rel, st in zip(gone, root_stats.stat_many(self._root, gone), strict=True)
            if not (st is not None and stat.S_ISLNK(st.st_mode) and (st.st_size, st.st_mtime) == known[rel])
        ]

    def _refresh(self, rel: str, seen: Stat) -> None:
        parent = rel.rsplit("/", 1)[0]
        folder = self._folders.get(parent)
        if folder is not None:
            folder.files[rel] = seen


def _waiting(rel: str, seen: Stat, cached: set[str], pending: Mapping[str, Stat]) -> bool:
    """A file of an unchanged folder, pending at the stat its folder's listing recorded."""
    return pending.get(rel) == seen and rel.rsplit("/", 1)[0] in cached
