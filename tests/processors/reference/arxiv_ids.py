"""The reference of finding arXiv ids in text (the product's is compiled, in predigest_native)."""

from __future__ import annotations

import re

from processors.arxiv_ids import _ARCHIVE_ALT, _new_style_ok, _old_style_ok, is_valid_arxiv_id

# No letter, digit or dot right before, no digit (or dot+digit) right after: keeps "1.7%", "0.30.0",
# IP addresses and longer digit runs from being read as ids.  CJK next to an id is fine.
_NEW_RE = re.compile(r"(?<![0-9A-Za-z_.])(\d{4})\.(\d{4,5})(?:v(\d+))?(?![0-9])(?!\.[0-9])")
_OLD_RE = re.compile(rf"(?<![0-9A-Za-z_.\-])({_ARCHIVE_ALT})(\.[A-Z]{{2}})?/(\d{{7}})(?:v(\d+))?(?![0-9])")
_OLD_HINT = re.compile(r"/\d{7}")
# Something that says it is an arXiv id: an `arXiv` prefix or an arxiv.org URL, then digits.dots.
_MENTION_RE = re.compile(
    r"(?:(?<![A-Za-z])arxiv(?>\s*[: ]\s*)|arxiv\.org/(?:abs|html|pdf)/)(\d{2,6}\.\d{1,7}(?:v\d+)?)(?![0-9.])",
    re.IGNORECASE,
)


def extract_arxiv_ids(text: str) -> list[str]:
    """Every valid arXiv id in `text`, without version, unique, in order of first appearance."""
    return list(_extract(text))


def _extract(text: str) -> tuple[str, ...]:
    found: list[tuple[int, str]] = []
    for m in _NEW_RE.finditer(text):
        if _new_style_ok(m.group(1), m.group(2)):
            found.append((m.start(), f"{m.group(1)}.{m.group(2)}"))
    # Old-style ids need "/" and seven digits; most notes have none, and the archive alternation is slow.
    for m in _OLD_RE.finditer(text) if _OLD_HINT.search(text) else ():
        if _old_style_ok(m.group(3)):
            # Canonical old-style id is archive/YYMMNNN; the subject class is not part of it.
            found.append((m.start(), f"{m.group(1)}/{m.group(3)}"))
    found.sort(key=lambda item: item[0])
    seen: dict[str, None] = {}
    for _, arxiv_id in found:
        seen.setdefault(arxiv_id, None)
    return tuple(seen)


def invalid_arxiv_mentions(text: str) -> list[str]:
    """Strings announced as arXiv ids (`arXiv:…`, an arxiv.org URL) that are not valid ids, unique, in order."""
    seen: dict[str, None] = {}
    for m in _MENTION_RE.finditer(text):
        if not is_valid_arxiv_id(m.group(1)):
            seen.setdefault(m.group(1), None)
    return list(seen)
