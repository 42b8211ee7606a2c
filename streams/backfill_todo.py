"""What `predigest backfill` sends, in which order: the watched folders walked in the order of their paths, less
what the ledger acknowledged in its current form, in chunks handed over as the walk goes, so sending starts at once."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from pathlib import Path

from processors.root_paths import WATCHED
from streams import root_files
from streams.root_files import UNREADABLE, Entry

Known = dict[str, tuple[int, float, str]]  # the ledger's entries: path → (size, mtime, sha256)


def walk(root: Path) -> Iterator[Entry]:
    """What the watcher looks at, with its lstat, in the order of the paths sorted as strings (the same archive
    backfills the same way): symlinks and special files too, to be refused as it does."""
    for top in sorted(WATCHED):  # no watched name begins another: a folder's paths sort as its name does
        yield from root_files.walk_sorted(root, top)


class Todo:
    """The walk's files that the ledger has not acknowledged as they are now, `chunk` at a time, in its order.

    The walk runs ahead in a thread of its own (its system calls release the GIL): ~10 µs of CPU a file, a tenth
    of the backfill's, so the total is known well before the end, while the first chunks are sent."""

    def __init__(self, root: Path, known: Known, chunk: int, on_walked: Callable[[Todo], None]) -> None:
        self._root, self._known, self._chunk, self._on_walked = root, known, chunk, on_walked
        self._chunks: asyncio.Queue[list[Entry] | BaseException] = asyncio.Queue()
        self._stop = threading.Event()
        self._walked = self._telling = False
        self.files = self.skipped = 0  # every file walked; those acknowledged as they are
        self.count = self.size = 0  # the files to send, and their bytes

    @contextlib.contextmanager
    def walking(self, pool: Executor) -> Iterator[None]:
        """The walk in one of the pool's threads, told to stop at the exit (the pool's shutdown waits for it)."""
        pool.submit(self._walk, asyncio.get_running_loop().call_soon_threadsafe)
        try:
            yield
        finally:
            self._stop.set()

    def start_telling(self) -> None:
        """From now on `on_walked` may run (at once if the walk is over): no line before Kafka answered."""
        self._telling = True
        if self._walked:
            self._on_walked(self)

    async def next(self) -> list[Entry]:
        """The next files to send, in the walk's order; [] once every file was, `on_walked` run if telling."""
        chunk = await self._chunks.get()
        if isinstance(chunk, BaseException):
            raise chunk
        return chunk

    def _walk(self, call: Callable[..., object]) -> None:
        try:
            chunk: list[Entry] = []
            for c in walk(self._root):
                if self._stop.is_set():
                    return
                self.files += 1
                entry = self._known.get(c.rel)
                # A file refused unreadable is read again: a chmod back leaves its size and time as they were.
                if (
                    entry is not None
                    and entry[0] == c.size
                    and entry[1] == c.mtime
                    and entry[2] != UNREADABLE
                ):
                    self.skipped += 1
                    continue
                chunk.append(c)
                self.count, self.size = self.count + 1, self.size + c.size
                if len(chunk) == self._chunk:
                    call(self._chunks.put_nowait, chunk)
                    chunk = []
            if chunk:
                call(self._chunks.put_nowait, chunk)
            call(self._walk_over)  # the loop runs callbacks in the order they came: after the last chunk's
            call(self._chunks.put_nowait, [])
        except BaseException as exc:  # raised in the loop, where it waits for the next chunk
            call(self._chunks.put_nowait, exc)

    def _walk_over(self) -> None:
        self._walked = True
        if not self._telling:
            return
        try:
            self._on_walked(self)
        except Exception as exc:  # raised in the loop, where it waits for the next chunk
            self._chunks.put_nowait(exc)
