"""Which paths under the root predigest reads (the watched folders, the names it ignores) and why it refuses a file."""

from __future__ import annotations

from typing import Literal

WATCHED = ("inbox", "paper_cards", "work-queue", "living")

FileRefusal = Literal[
    "symlink",  # the path is a symlink (to a file or a folder, inside the root or not)
    "outside",  # a folder on the way is a symlink: the path may lead anywhere
    "special",  # a FIFO, socket or device: reading it could block or have effects
    "unreadable",  # the file system refused (permissions …)
]
# The refusal travels to the worker as its code (RawFile.refused_code, a processors.reasons.RejectionCode,
# the metric label there) and as text (RawFile.refused) for the reader.
REFUSAL_TEXT: dict[FileRefusal, str] = {
    "symlink": "is a symlink; only regular files under the root are read",
    "outside": "lies under a symlinked folder, which may lead outside the root; not read",
    "special": "is not a regular file (a FIFO, socket or device)",
    "unreadable": "is unreadable",
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
