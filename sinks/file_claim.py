"""A process's claim on a DuckDB file that outlives its connection: DuckDB's own lock goes with the connection,
which the ledger closes after a refusal that invalidated it (the next write opens the file again, 1-60 s later)
and the worker's state after a checkpoint out of memory (opened again with more memory, or left closed)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import weakref
from collections.abc import Callable
from pathlib import Path

from sinks.duck import DuckFile, make_folder
from sinks.errors import StateLocationError, StateLockedError

# What this process is (its predigest command: "backfill"), written beside its PID for a process it refuses to
# name: the command line sets it at its start; left empty (a test, a bench script), the PID stands alone.
_command = ""


def name_holder(command: str) -> None:
    """Name this process's claims from now on (`predigest <command>` in a refused process's line)."""
    global _command
    _command = command


def lock_path(path: Path) -> Path:
    """The lock file beside `path`: never deleted (a file deleted while held would let a third process in)."""
    return path.with_name(f"{path.name}.lock")


class FileClaim:
    """An exclusive flock on the file's `.lock` beside it, from the first open to the last close: a second process
    (a watcher, a worker, …) is refused while this one's connection is closed too. The kernel lets go at its exit."""

    def __init__(self, path: Path, file: DuckFile) -> None:
        if str(path) == ":memory:":  # DuckDB's database in memory (a test's, a bench's): no file to claim
            self._release: Callable[[], object] = lambda: None
            return
        make_folder(path, file)
        self.path = lock_path(path)
        try:
            # Non-inheritable: no child started holds it. 0o666 less the umask, as DuckDB makes the ledger: whoever
            # may write the ledger may take its lock.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise StateLocationError(
                f"cannot use the lock file {self.path} of the {file.what}: {exc.strerror or exc}. Check the path "
                "in the settings and that this user may write there."
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StateLockedError(
                f"cannot open the {file.what} {path}: its lock file {self.path} is held by {holder}. {file.if_locked}"
            ) from None
        except OSError as exc:  # a filesystem without locks: DuckDB's own lock would fail there too
            os.close(fd)
            raise StateLocationError(
                f"cannot lock the lock file {self.path} of the {file.what}: {exc.strerror or exc}. Keep the state "
                "folder on a local filesystem."
            ) from exc
        # Closed (the lock let go) also when its owner is dropped unclosed, as a DuckDB connection is.
        self._release = weakref.finalize(self, os.close, fd)
        # What a refused process names; a full disk leaves it empty (a new lock file, the first start of this
        # release), the start going on as DuckDB's open of the ledger does.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {_command}".strip().encode() + b"\n", 0)

    def release(self) -> None:
        """Let go (once; again is a no-op)."""
        self._release()


def check_free(path: Path, file: DuckFile) -> None:
    """StateLockedError while another process holds `path`: a command's check before it starts a broker or makes
    topics (its own claim is taken at the file's open, a moment later)."""
    FileClaim(path, file).release()


def _holder(fd: int) -> str:
    """Who holds it as the holder wrote it: `predigest backfill` (PID n), another process (PID n) as a lock file
    of a release before 2026-12-07 says (its PID alone), or another process while it has not written yet."""
    pid, _, command = os.pread(fd, 64, 0).decode("ascii", "replace").strip().partition(" ")
    if not pid.isdigit():
        return "another process"
    return f"`predigest {command}` (PID {pid})" if command.isidentifier() else f"another process (PID {pid})"
