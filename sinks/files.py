"""Briefing files, written atomically (temp file + rename) so a reader never sees half a briefing."""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import pydantic_core
from predigest_native import JsonIndenter

log = logging.getLogger(__name__)

# A briefing file's bytes in consecutive pieces, made as the file is written (anew at each call).
FileMaker = Callable[[], Iterable[bytes | memoryview]]

# What `_atomic_write` names its temp files (mkstemp: the prefix, then eight of [a-z0-9_]), and only that.
_TEMP = re.compile(r"^\..+\.(?:md|json)\.[a-z0-9_]{8}$")
STALE_TEMP_SECONDS = 60.0  # a write takes well under a second; a younger temp file may be another worker's


def remove_stale_temps(out_dir: Path, now: float) -> list[Path]:
    """Remove the temp files an interrupted briefing write left in `<out>/<axis>/` (a worker killed mid-write):
    this writer's own names only, and only those untouched for a minute (`now`: wall time, epoch seconds)."""
    removed = []
    for folder in out_dir.iterdir() if out_dir.is_dir() else ():
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in folder.iterdir():
            try:
                st = path.lstat()
                if _TEMP.match(path.name) and path.is_file() and now - st.st_mtime > STALE_TEMP_SECONDS:
                    path.unlink()
                    removed.append(path)
            except OSError:  # gone meanwhile, or not ours to remove: leave it
                continue
    return removed


# Briefings are for the host's readers (an editor, a bind-mounted folder read by another uid): mkstemp's 0600
# would leave them to the worker's user alone. The umask still applies, as it would to a plain open().
FILE_MODE = 0o644


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once, at import: os.umask is process-wide, and briefings are written from threads.
PROCESS_UMASK = _umask()


def _atomic_write(target: Path, data: Iterable[bytes | memoryview]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, FILE_MODE & ~PROCESS_UMASK)
        with os.fdopen(fd, "wb") as fh:
            for piece in data:
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    # The rename itself is durable only once the directory entry is on disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pretty_json(briefing_json: str | bytes) -> str:
    """The `.json` file's text: the recorded JSON, indented; the same bytes every time it is written."""
    return pretty_json_bytes(briefing_json).decode()


def pretty_json_bytes(briefing_json: str | bytes) -> bytes:
    """`pretty_json` as the file's bytes (a 100k window's is ~100 MB: no str copy of it is made)."""
    # pydantic-core's serializer: the recorded JSON's own number formatting, ~3x faster than json's indenting
    # encoder on the multi-MB JSON of a large window. An emission's file skips the parse (`indented_pieces`).
    return pydantic_core.to_json(pydantic_core.from_json(briefing_json), indent=2) + b"\n"


def indented_pieces(compact: Iterable[bytes | memoryview]) -> Iterator[bytes]:
    """The `.json` file's bytes from its compact JSON's pieces (cut anywhere), each indented as it comes in compiled
    code (`JsonIndenter`): the bytes `pretty_json_bytes` makes, without a parse nor the ~100 MB held whole."""
    indenter = JsonIndenter(2)
    for piece in compact:
        yield indenter.feed(piece if isinstance(piece, bytes) else bytes(piece))
    yield indenter.finish() + b"\n"


class BriefingFiles:
    """Writes `<out>/<axis>/<basename>.md` and `.json`."""

    def __init__(self, out_dir: Path) -> None:
        self._out = out_dir

    def clean_up(self, now: float) -> None:
        """At start: remove what an interrupted write left (`now`: wall time, epoch seconds)."""
        try:
            removed = remove_stale_temps(self._out, now)
        except OSError as exc:  # a folder that cannot be read stops its axes' briefings, not the worker
            log.warning("could not look for temp files in %s: %s", self._out, exc)
            return
        if removed:
            log.warning(
                "removed %d temp file(s) left by an interrupted briefing write: %s",
                len(removed),
                ", ".join(str(p) for p in removed[:5]),
            )

    def paths(self, axis: str, basename: str) -> tuple[Path, Path]:
        folder = self._out / axis
        return folder / f"{basename}.md", folder / f"{basename}.json"

    def ensure(
        self, axis: str, basename: str, briefing_json: str | bytes, markdown: str | bytes
    ) -> list[Path]:
        """Write whichever file is missing or differs from the recorded bytes; returns the ones written."""
        return self.ensure_made(
            axis,
            basename,
            lambda: (pretty_json_bytes(briefing_json),),
            lambda: (markdown if isinstance(markdown, bytes) else markdown.encode(),),
        )

    def ensure_made(self, axis: str, basename: str, json_file: FileMaker, markdown: FileMaker) -> list[Path]:
        """`ensure` from the files' makers, each called once: each file is compared and written a piece at a
        time, so no file's bytes (~100 MB at 100k sources) are held whole when its maker yields them in pieces."""
        md, js = self.paths(axis, basename)
        return [target for target, make in ((js, json_file), (md, markdown)) if _ensure(target, make())]


def _ensure(target: Path, pieces: Iterable[bytes | memoryview]) -> bool:
    """Write `pieces` unless the file holds exactly them; True if written. Made once (a restored emission's
    Markdown or indented JSON is rendered anew at each call): compared a piece at a time, and from the first that
    differs written on, what matched before it copied from the same open file."""
    rest = iter(pieces)
    try:
        fh = target.open("rb")
    except FileNotFoundError:
        _atomic_write(target, rest)
        return True
    with fh:
        matched = 0
        for piece in rest:
            if fh.read(len(piece)) != piece:
                _atomic_write(target, _written_on(fh, matched, piece, rest))
                return True
            matched += len(piece)
        if fh.read(1) == b"":
            return False
        _atomic_write(target, _written_on(fh, matched))  # longer than the pieces: cut to them
    return True


def _written_on(
    fh: BinaryIO, matched: int, piece: bytes | memoryview = b"", rest: Iterable[bytes | memoryview] = ()
) -> Iterator[bytes | memoryview]:
    """The compared file's first `matched` bytes, a MiB at a time, then the rest. Read from the handle that was
    compared, not the path: a file replaced meanwhile (another worker, a sync tool) must not lend its bytes."""
    fh.seek(0)
    while matched > 0:
        chunk = fh.read(min(matched, 1 << 20))
        if not chunk:  # cut short under us: fail the write rather than rename a mix into place
            raise OSError(
                f"{fh.name} shrank while it was rewritten; the briefing is written again at the next try"
            )
        matched -= len(chunk)
        yield chunk
    yield piece
    yield from rest
