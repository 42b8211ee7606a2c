"""The one way predigest lists and reads files under the root: links are never followed, a file is opened first,
checked on its descriptor, and read only from it (the watcher, `backfill` and anything else that reads the root).

Checking a path and then opening it by name lets a writer swap in a symlink (an outside file leaks) or a FIFO
(open blocks for good) between the two calls. Here every folder on the way is opened with O_NOFOLLOW relative
to its parent's descriptor, the file with O_NOFOLLOW | O_NONBLOCK, and fstat decides what was opened.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from processors.models import RawFile
from processors.root_paths import (
    BAD_FOLDER_TEXT,
    REFUSAL_TEXT,
    FileRefusal,
    fs_rel,
    ignored,
    is_text,
    text_rel,
)
from streams.root_stats import stat_own

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """A path under the root that is not a folder (a file, a symlink, a FIFO …), with its lstat."""

    rel: str
    size: int
    mtime: float


@dataclass(frozen=True)
class Regular:
    """A regular file, read from its descriptor; `data` is None when it is over max_bytes (not read)."""

    size: int
    mtime: float
    data: bytes | None


@dataclass(frozen=True)
class Refused:
    """Not read, and why; `size`/`mtime` of what was there, when known."""

    reason: FileRefusal
    detail: str
    size: int | None = None
    mtime: float | None = None


UNREADABLE = "refused-unreadable"  # the ledger's digest of a file refused unreadable (refusal_record's)


def refusal_record(rel: str, size: int, mtime: float, refused: Refused) -> RawFile:
    """The record that tells the worker a file was refused (no bytes; one digest per reason, sent once)."""
    return RawFile(
        path=rel,
        content=b"",
        size=size,
        mtime=mtime,
        sha256=f"refused-{refused.reason}",
        refused=f"it {refused.detail}",
        refused_code=refused.reason,
    )


@dataclass(frozen=True)
class Missing:
    """Nothing there (any more)."""


@dataclass(frozen=True)
class Folder:
    """A folder where a file was looked for: what is under it is looked at one by one."""


@dataclass(frozen=True)
class Changed:
    """The file changed while it was read: read it again once it is quiet."""


FileOutcome = Regular | Refused | Missing | Folder | Changed


def walk(root: Path, rel: str) -> Iterator[Entry]:
    """Every non-folder under `root/rel`, sorted per folder; a symlinked folder is listed (to be refused), never
    entered; ignored names are skipped; what vanishes during the walk is skipped."""
    alone = _alone(root, rel)
    if alone is not None:
        yield from alone
        return
    stack = [rel]
    while stack:
        files, folders = list_folder(root, stack.pop())
        yield from files
        stack.extend(reversed(folders))


def walk_sorted(root: Path, rel: str) -> Iterator[Entry]:
    """`walk`'s entries in the order of their paths sorted as strings: the backfill sends in that order, and
    starts sending before the walk ends."""
    alone = _alone(root, rel)
    if alone is not None:
        yield from alone
        return
    # A stack of folders being listed, not nested generators: each entry would pass through one per level.
    stack = [_in_path_order(root, rel)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, str):
                stack.append(_in_path_order(root, item))
                break
            yield item
        else:
            stack.pop()


def _alone(root: Path, rel: str) -> list[Entry] | None:
    """None when `root/rel` is a folder; else its entry, or nothing when it is not there."""
    top = stat_own(root, rel)
    if top is None:
        return []
    return None if stat.S_ISDIR(top.st_mode) else [Entry(rel, top.st_size, top.st_mtime)]


def _in_path_order(root: Path, rel: str) -> Iterator[Entry | str]:
    """A folder's files and sub-folders as their paths sort: a folder's own paths all go as `name/` sorts."""
    files, folders = list_folder(root, rel)
    items: list[Entry | str] = [*files, *folders]
    return iter(sorted(items, key=_path_key))


def _path_key(item: Entry | str) -> str:
    # "a/x" sorts after "a-b" ('/' comes after '-'): a folder's place is `a/`'s, not `a`'s.
    return f"{item}/" if isinstance(item, str) else item.rel


def list_folder(root: Path, rel: str) -> tuple[list[Entry], list[str]]:
    """The files (anything but a folder, with its lstat) and the folders right in `root/rel`, sorted by name;
    ([], []) when it vanished or cannot be read (its files are not there to publish)."""
    # Listed from its descriptor, its folders opened as a read opens them: a listing by name went through a
    # folder swapped for a symlink meanwhile, and an outside file's name and stat came out as the root's.
    fd = _open_folder(root, fs_rel(rel).split("/"))
    if not isinstance(fd, int):
        return [], []
    try:
        return _listed(fd, rel)
    finally:
        os.close(fd)


def _listed(fd: int, rel: str) -> tuple[list[Entry], list[str]]:
    # Paths as strings, not pathlib objects: a rescan lists 100,000 files, and pathlib took half its time.
    try:
        with os.scandir(fd) as it:
            entries = sorted((e for e in it if not ignored(e.name)), key=lambda e: e.name)
    except OSError:
        return [], []
    files: list[Entry] = []
    folders: list[str] = []
    for e in entries:
        # A name that is not UTF-8 is listed escaped (its files refused, never read), a folder so named entered.
        name = e.name if e.name.isascii() and "\\" not in e.name else text_rel(e.name)
        try:
            if e.is_dir(follow_symlinks=False):
                folders.append(f"{rel}/{name}")
                continue
            st = e.stat(follow_symlinks=False)  # fstatat on the folder's descriptor
        except OSError:
            continue
        files.append(Entry(f"{rel}/{name}", st.st_size, st.st_mtime))
    return files, folders


def lstat(root: Path, rel: str) -> tuple[int, float] | None:
    """(size, mtime) of the path itself, not of what a link points to (`root_stats.stat_own`); None when not
    there."""
    st = stat_own(root, rel)
    return None if st is None else (st.st_size, st.st_mtime)


def _on_disk(root: Path, rel: str) -> str | FileOutcome:
    """The path `rel` keys on the file system; refused when a part of it is not UTF-8 (never read)."""
    if "\\" not in rel:
        return rel
    path = fs_rel(rel)
    if is_text(path):
        return path
    # Its folders opened as any file's are (no link followed): a plain lstat went through a symlinked folder.
    folder, _, name = path.rpartition("/")
    opened = _open_folder(root, folder.split("/") if folder else [])
    if not isinstance(opened, int):
        return opened
    try:
        st = os.stat(name, dir_fd=opened, follow_symlinks=False)
    except OSError:
        return Missing()
    finally:
        os.close(opened)
    if stat.S_ISDIR(st.st_mode):
        return Folder()  # its files are keyed and refused one by one
    why = REFUSAL_TEXT["bad_name"] if is_text(path.rpartition("/")[0]) else BAD_FOLDER_TEXT
    return Refused("bad_name", why, st.st_size, st.st_mtime)


def read_file(root: Path, rel: str, max_bytes: int) -> FileOutcome:
    """Open `root/rel` without following any link, check what was opened, read at most max_bytes + 1 from it;
    Changed when the name no longer has what was read (replaced meanwhile: read what is there once it is quiet)."""
    path = _on_disk(root, rel)
    if not isinstance(path, str):
        return path
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return _refused("outside")
    folder = _open_folder(root, parts[:-1])
    if not isinstance(folder, int):
        return folder
    try:
        read = _read_in(folder, parts[-1], max_bytes)
        return read if _still_named(folder, parts[-1], read) else Changed()
    finally:
        os.close(folder)


def _still_named(dir_fd: int, name: str, read: FileOutcome) -> bool:
    """Whether the name has, in the folder it was read from, the size and time of the file read."""
    # In the folder already open: the publisher looked the path up anew from the root after each read (three
    # folder opens a note, ~8 µs; watch44), which a swap of a folder on the way cannot turn into a leak here either.
    if not isinstance(read, Regular) or read.data is None:
        return True
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_size, st.st_mtime) == (read.size, read.mtime)


def read_many(root: Path, rels: Sequence[str], max_bytes: int) -> Generator[FileOutcome, None, None]:
    """`read_file` of each path in turn, a folder opened once for the paths right in it that follow one another.

    The backfill reads sorted paths: opening the root and each folder on the way per file cost ~8 µs of its ~20
    (docs/performance.md). A folder swapped meanwhile is seen by the next folder's files, as a file swapped after
    its folder was opened always was.
    """
    held: tuple[list[str], int | FileOutcome] | None = None  # the folder's parts, its descriptor or outcome
    try:
        for rel in rels:
            path = _on_disk(root, rel)
            if not isinstance(path, str):
                yield path
                continue
            parts = path.split("/")
            if any(p in ("", ".", "..") for p in parts):
                yield _refused("outside")
                continue
            if held is None or held[0] != parts[:-1]:
                # Forgotten before it is closed: should the next open raise, `finally` must not close its number
                # again (by then possibly another thread's descriptor).
                old, held = held, None
                if old is not None and isinstance(old[1], int):
                    os.close(old[1])
                held = (parts[:-1], _open_folder(root, parts[:-1]))
            folder = held[1]
            yield _read_in(folder, parts[-1], max_bytes) if isinstance(folder, int) else folder
    finally:
        if held is not None and isinstance(held[1], int):
            os.close(held[1])


def _open_folder(root: Path, parts: list[str]) -> int | FileOutcome:
    """A descriptor of `root/parts…`, each folder opened without following a link; else what a read answers."""
    try:
        dir_fd = os.open(
            root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        )  # the root itself is the operator's
    except OSError as exc:
        return _refused("unreadable", exc)
    opened = False
    try:  # closed on any other exit too: os.open raises ValueError, not OSError, for a NUL in a name
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                return _folder_failed(dir_fd, part, exc)
            dir_fd, parent = child, dir_fd
            os.close(parent)
        opened = True
        return dir_fd
    finally:
        if not opened:
            os.close(dir_fd)


def _folder_failed(dir_fd: int, name: str, exc: OSError) -> FileOutcome:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return Missing()
        # O_DIRECTORY | O_NOFOLLOW answers ENOTDIR for a symlink: the lstat says which it was. The refusal has
        # the link's own size and time: a path under it is its version, nothing of what it leads to.
        if stat.S_ISLNK(st.st_mode):
            return Refused("outside", REFUSAL_TEXT["outside"], st.st_size, st.st_mtime)
        return Missing()
    return _refused("unreadable", exc)


def _read_in(dir_fd: int, name: str, max_bytes: int) -> FileOutcome:
    try:
        # A look first, so that a device or FIFO is not even opened unless swapped in this very moment.
        seen = _kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
        if seen is not None:
            return seen
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return Missing()
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped for a symlink after the look
            return _refused("symlink")
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            return _refused("special")
        return _refused("unreadable", exc)
    try:
        st = os.fstat(fd)
        opened = _kind(st)
        if opened is not None:
            return opened
        if st.st_size > max_bytes:  # travels without its bytes; the parser rejects it
            return Regular(st.st_size, st.st_mtime, None)
        data = _read_at_most(fd, max_bytes + 1)
        after = os.fstat(fd)
    except OSError as exc:
        return _refused("unreadable", exc)
    finally:
        os.close(fd)
    if len(data) != st.st_size or (after.st_size, after.st_mtime) != (st.st_size, st.st_mtime):
        return Changed()
    return Regular(st.st_size, st.st_mtime, data)


def _kind(st: os.stat_result) -> FileOutcome | None:
    """None for a regular file; else what the path is instead."""
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return Folder()
    reason: FileRefusal = "symlink" if stat.S_ISLNK(st.st_mode) else "special"
    return Refused(reason, REFUSAL_TEXT[reason], st.st_size, st.st_mtime)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _refused(reason: FileRefusal, exc: OSError | None = None) -> Refused:
    detail = REFUSAL_TEXT[reason]
    if exc is not None:
        detail = f"{detail} ({exc.strerror or exc})"
    return Refused(reason, detail)
