"""Markdown pieces read in Python: emoji decoration, links within a note."""

from __future__ import annotations

import re

# Pictographs and their joiners, © and ® only as emoji, and the variation selector except in a keycap.
EMOJI = re.compile(
    r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u2300-\u23FF\u200D]|[©®](?=\ufe0f)|\ufe0f(?!\u20e3)"
)


def is_internal(url: str) -> bool:
    """True for a link within the note or its folder: `#anchor`, `../x.md`, `./graph.html`."""
    if url.startswith("#"):
        return True
    if "://" in url or url.startswith(("mailto:", "//")):
        return False
    return url.startswith(("./", "../", "/")) or url.split("#", 1)[0].endswith((".md", ".html", ".htm"))
