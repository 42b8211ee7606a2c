"""The reference of heading cleaning and § numbers (the product's are compiled, in predigest_native)."""

from __future__ import annotations

import re

from processors.markup import EMOJI

_SECTION_NO = re.compile(r"§\s*(\d+(?:\.\d+)*)")
# `2.4 Title`, `3. Title`. A keycap (`1️⃣ Pruning`) decorates a curated list's heading: no number an editor cites.
_PLAIN_NO = re.compile(r"^(\d{1,2}(?:\.\d{1,3})*)\.?(?=\s|$)")
_KEYCAP = re.compile(r"[0-9#*]\ufe0f?\u20e3")
# What a dropped back-link leaves: `()`, `[back]`, `（返回）`. Each run of white space is read once (main's robust
# branch: `\s*(?:…)?\s*` split a long run every possible way before failing).
_RESIDUE = re.compile(
    r"[(\[（【]\s*(?:(?:back(?: to top)?|top|toc|up|返回(?:顶部|目录)?|回到顶部|맨 위로)\s*)?[)\]）】]",
    re.IGNORECASE,
)
# The text of a back-link: `[Back]`, `©️back👆🏻` (emoji removed or not), `返回顶部`.
BACK_TEXT = re.compile(
    r"^\W*(?:(?:back(?: to top)?|top|toc|返回(?:顶部|目录)?|回到顶部|맨 위로)\W*)?$", re.IGNORECASE
)


def section_number(heading: str) -> str | None:
    """`§3.3` for `§3.3 Cache`, `附录 §5.1 x`, `3.3 Cache` or `3. Cache`; None otherwise (`3️⃣ Cache` too)."""
    m = _SECTION_NO.search(heading) or _PLAIN_NO.match(heading)
    return f"§{m.group(1)}" if m else None


def clean_heading(text: str) -> str:
    """A heading's plain text without emoji decoration or back-link residue, whitespace collapsed."""
    # Collapsed first: `_RESIDUE` then never meets a run of spaces to backtrack over.
    text = EMOJI.sub("", _KEYCAP.sub("", " ".join(text.split())))
    return " ".join(_RESIDUE.sub(" ", text).split())
