"""Files renamed into place, from Linux inotify (IN_MOVED_TO): watchfiles reports a rename as a plain "added".

A writer that writes a temporary file and renames it over the note has finished it, so the watcher may
publish it at once instead of waiting for the quiet period. This only speeds such files up: watchfiles,
the quiet period and the rescans still see every change, on any platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

IN_CREATE = 0x00000100
IN_MOVED_TO = 0x00000080
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ISDIR = 0x40000000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
_MASK = IN_MOVED_TO | IN_CREATE | IN_ONLYDIR


class RenameWatch:
    """Calls `on_moved(path)` for every file renamed into a folder under `root/<top>`; new folders are added."""

    def __init__(self, root: Path, tops: Iterable[str], on_moved: Callable[[Path], None]) -> None:
        self._root = root
        self._tops = set(tops)
        self._on_moved = on_moved
        self._fd = -1
        self._dirs: dict[int, Path] = {}
        self._libc: ctypes.CDLL | None = None

    def start(self) -> bool:
        """Watch from now on, in the running loop; False where inotify is not available (nothing else changes)."""
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name, use_errno=True)
            fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        except (OSError, AttributeError) as exc:
            log.info("no inotify here (%s): renamed files wait for the quiet period like the others", exc)
            return False
        if fd < 0:
            log.info(
                "inotify_init1 failed (%s): renamed files wait for the quiet period",
                os.strerror(ctypes.get_errno()),
            )
            return False
        self._libc, self._fd = libc, fd
        self._add(self._root)  # for top folders made later; the rest of the root is none of ours
        for top in sorted(self._tops):
            self._add_tree(self._root / top)
        asyncio.get_running_loop().add_reader(fd, self._read)
        return True

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(RuntimeError):  # the loop may already be closed
                asyncio.get_running_loop().remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1

    def _add(self, folder: Path) -> None:
        assert self._libc is not None
        wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK))
        if wd >= 0:
            self._dirs[wd] = folder

    def _add_tree(self, folder: Path) -> None:
        # Symlinked folders are not followed (the watcher refuses what is under them).
        if not folder.is_dir() or folder.is_symlink():
            return
        self._add(folder)
        for parent, dirs, _ in os.walk(folder):
            for d in dirs:
                path = Path(parent) / d
                if not path.is_symlink():
                    self._add(path)

    def _read(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
            offset += _EVENT.size + length
            if mask & IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            folder = self._dirs.get(wd)
            if folder is None or mask & IN_Q_OVERFLOW:
                continue  # an overflow loses renames only: the quiet period and the rescan still see them
            path = folder / os.fsdecode(raw.rstrip(b"\0"))
            if mask & IN_ISDIR:
                if folder != self._root or path.name in self._tops:
                    self._add_tree(path)
            elif mask & IN_MOVED_TO:
                self._on_moved(path)
