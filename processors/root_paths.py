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
# A file whose own name is valid, refused for its folder's: renaming the file would not help (code bad_name too).
BAD_FOLDER_TEXT = (
    "lies in a folder whose name is not valid UTF-8 (shown escaped); rename that folder to be read"
)


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


_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")  # what _escape writes: a doubled backslash, or `\\xff`


def text_rel(rel: str) -> str:
    """The text a path (as os.fsdecode gives it) is keyed and shown by: itself, but for each part that is not valid
    UTF-8, or that reads as such a part's escape, escaped (each such byte as `\\xff`, each backslash doubled)."""
    # Any UTF-8 text is a valid file name: a file literally named `a\xff.md` is keyed `a\\xff.md`, so that it
    # and the file whose name holds byte 0xff never share a key (_stands_for_bad). Other names are themselves.
    if "\\" not in rel and (rel.isascii() or is_text(rel)):
        return rel
    return "/".join(_text_name(part) for part in rel.split("/"))


def fs_rel(rel: str) -> str:
    """The path on the file system (as os.fsdecode gives it) that `text_rel` keyed `rel`."""
    if "\\" not in rel:
        return rel
    return "/".join(_fs_name(part) for part in rel.split("/"))


def _stands_for_bad(part: str) -> bool:
    """True when a valid name, unescaped again and again, comes to one that is not UTF-8: text_rel escapes it."""
    name = _unescape(part)
    while name is not None:
        if not is_text(name):
            return True
        name = _unescape(name)
    return False


def is_text(name: str) -> bool:
    """True when a name as os.fsdecode gives it is valid UTF-8 (no byte escaped as a surrogate)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _text_name(name: str) -> str:
    return _escape(name) if not is_text(name) or _stands_for_bad(name) else name


def _fs_name(part: str) -> str:
    # Escaped by text_rel exactly when unescaping it comes to a bad name; any other part is a name as written.
    name = _unescape(part) if _stands_for_bad(part) else None
    return part if name is None else name


def _escape(name: str) -> str:
    raw = name.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\")
    return raw.decode("utf-8", "backslashreplace")


def _unescape(name: str) -> str | None:
    """The name whose `_escape` is `name`; None when it is none's (a backslash of another kind, or an escape of
    bytes that are UTF-8 together, which `_escape` would have written as their character)."""
    if "\\" not in name or "\\" in _ESCAPE.sub("", name):
        return None
    # Each escaped byte back as the surrogate os.fsdecode makes of it.
    raw = _ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(0xDC00 + int(m[1][1:], 16)), name)
    return raw if _escape(raw) == name else None
