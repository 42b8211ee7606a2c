"""Low-cardinality metric labels derived from paths (pure, no I/O)."""

from __future__ import annotations

import re

NO_WRITER = "none"
OTHER_WRITER = "other"
# A writer is an inbox folder name; anything unusual is folded so a stray folder cannot explode the series.
_WRITER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


def writer_label(path: str) -> str:
    """The writer of a root-relative path: `inbox/<writer>/…` gives `<writer>`, anything else `none`."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "inbox":
        return NO_WRITER
    return parts[1].lower() if _WRITER_RE.match(parts[1]) else OTHER_WRITER
