"""Which paths under the root predigest reads (the watched folders, the names it ignores) and why it refuses a file."""

from __future__ import annotations

import re
from typing import Literal

WATCHED = ("inbox", "paper_cards", "work-queue", "living")

FileRefusal = Literal[
    "symlink",  # the path is a symlink (to a file or a folder, inside the root or not)
    "outside",  # a folder on the way is a symlink: the path may lead anywhere
    "special",  # a FIFO, socket or device: reading it could block or have effects
    "unreadable",  # the file system refused (permissions …)
    "bad_name",  # its name (or a folder's on the way) is not valid UTF-8: it cannot be a Kafka key or a state row
]
# The refusal travels to the worker as its code (RawFile.refused_code, a processors.reasons.RejectionCode,
# the metric label there) and as text (RawFile.refused) for the reader.
REFUSAL_TEXT: dict[FileRefusal, str] = {
    "symlink": "is a symlink; only regular files under the root are read",
    "outside": "lies under a symlinked folder, which may lead outside the root; not read",
    "special": "is not a regular file (a FIFO, socket or device)",
    "unreadable": "is unreadable",
    "bad_name": "has a name that is not valid UTF-8 (shown escaped); rename it to be read",
}


def ignored(name: str) -> bool:
    """Editors and writers park half-written files under such names before renaming them into place."""
    return name.startswith(".") or name.endswith(("~", ".tmp", ".swp", ".part"))


def watched(rel: str) -> bool:
    """True for a root-relative POSIX path in a watched folder (or that folder) with no ignored name on the way."""
    parts = rel.split("/")
    if parts[0] not in WATCHED or any(p in ("", ".", "..") for p in parts):
        return False
    return not any(ignored(p) for p in parts[1:])


def top_folder(rel: str) -> str:
    """The watched folder a path is in: the `kind` label of the watcher's metrics."""
    return rel.split("/", 1)[0]


_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")  # what text_rel writes: a doubled backslash, or `\\xff`


def text_rel(rel: str) -> str:
    """`rel` itself when its name is valid UTF-8; else the path up to its first part that is not, that part
    escaped (each such byte as `\\xff`, each backslash doubled, so that two such names never share one)."""
    if rel.isascii():
        return rel
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if not _is_text(part):
            raw = part.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\")
            return "/".join([*parts[:i], raw.decode("utf-8", "backslashreplace")])
    return rel


def escaped_bytes(rel: str) -> bytes | None:
    """The file system's bytes of a path `text_rel` escaped; None when `rel` is no such escape."""
    # text_rel escapes the last part alone: the folders before it are valid names, taken as they are written.
    folder, _, last = rel.rpartition("/")
    if "\\" not in last or "\\" in _ESCAPE.sub("", last):
        return None  # no backslash, or one that is no escape of ours: a name written that way
    # Each escaped byte back as the surrogate os.fsencode turns into that byte.
    name = _ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(0xDC00 + int(m[1][1:], 16)), last)
    raw = name.encode("utf-8", "surrogateescape")
    try:
        raw.decode()
    except UnicodeDecodeError:
        return f"{folder}/".encode("utf-8", "surrogateescape") + raw if folder else raw
    return None  # its bytes are UTF-8: a valid name written with backslashes, never one of ours


def _is_text(part: str) -> bool:
    try:
        part.encode()
    except UnicodeEncodeError:
        return False
    return True
