"""The lstat of paths under the root with no symlinked folder followed on the way: one path, or many with each
folder on their way opened once for all of them (the watcher's rescans and settles look at thousands at a time).

Every folder on the way is opened `O_PATH | O_NOFOLLOW` from its parent's descriptor and the last part stat'ed from
its folder's descriptor (`fstatat`, no link followed): a path under a symlinked folder has the link's own stat.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from processors.root_paths import fs_rel

# A place to stat from, not read: a plain lstat needs no more than search permission (opened for reading, a
# folder that may be searched but not listed gave its files no stat, and a note there was refused anew at every
# rescan), and an O_PATH open raises no inotify event at the watched folder.
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_BAD_PARTS = ("", ".", "..")


def stat_own(root: Path, rel: str) -> os.stat_result | None:
    """The lstat of `root/rel` with no link followed on the way: of the symlinked folder met on it, if any (what a
    path under it is refused `outside` with); None when it is not there."""
    return stat_many(root, [rel])[0]


def stat_many(root: Path, rels: Sequence[str]) -> list[os.stat_result | None]:
    """`stat_own` of each path, in order; each folder opened once for the paths right in it."""
    # A plain lstat follows a symlinked folder on the way: an outside file's size and time went out in the
    # refusal of a path under it. Opening the folders on the way per path cost 3 opens a note for each look:
    # a rescan during a 100k first start looks at every note not yet acknowledged (watch44).
    out: list[os.stat_result | None] = [None] * len(rels)
    by_folder: dict[str, list[tuple[int, str]]] = {}
    for i, rel in enumerate(rels):
        folder, sep, name = fs_rel(rel).rpartition("/")
        if sep and not folder:  # "/name": its empty first part makes it none, not the root's own entry
            continue
        by_folder.setdefault(folder, []).append((i, name))
    try:
        root_fd = os.open(root, _PATH_FLAGS & ~os.O_NOFOLLOW)  # the root itself is the operator's
    except OSError:
        return out
    try:
        for folder, names in by_folder.items():
            parts = folder.split("/") if folder else []
            if any(p in _BAD_PARTS for p in parts):
                continue
            _stat_in(root_fd, parts, names, out)
    finally:
        os.close(root_fd)
    return out


def _stat_in(
    root_fd: int, parts: list[str], names: list[tuple[int, str]], out: list[os.stat_result | None]
) -> None:
    """Each name's lstat in the folder `parts` under the root, or the symlink's met on the way, into `out`."""
    at = _folder_at(root_fd, parts)
    if not isinstance(at, int):
        for i, name in names:
            out[i] = None if name in _BAD_PARTS else at
        return
    try:
        for i, name in names:
            if name not in _BAD_PARTS:
                try:
                    out[i] = os.stat(name, dir_fd=at, follow_symlinks=False)
                except OSError:
                    out[i] = None
    finally:
        if at != root_fd:
            os.close(at)


def _folder_at(root_fd: int, parts: list[str]) -> int | os.stat_result | None:
    """A descriptor of the folder (`root_fd` itself for the root); else the lstat of the symlink met on the way,
    or None (not there, not a folder, not searchable)."""
    dir_fd = root_fd
    try:
        for part in parts:
            try:
                child = os.open(part, _PATH_FLAGS, dir_fd=dir_fd)
            except OSError:
                try:
                    st = os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    return None
                return st if stat.S_ISLNK(st.st_mode) else None
            if dir_fd != root_fd:
                os.close(dir_fd)
            dir_fd = child
        held, dir_fd = dir_fd, root_fd  # handed to the caller: not closed here
        return held
    finally:
        if dir_fd != root_fd:
            os.close(dir_fd)
