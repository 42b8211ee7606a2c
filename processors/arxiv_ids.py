"""Find, validate and normalise arXiv identifiers in free text and file names.

Finding them in text is compiled (predigest_native: `YYMM.NNNNN` after no letter, digit or dot, not before
another digit; `archive/YYMMNNN`; `arXiv:`/arxiv.org mentions), equal to the reference patterns under
tests/processors/reference/arxiv_ids.py; validating one id is done here.
"""

from __future__ import annotations

import re
from functools import lru_cache

import predigest_native

# Ids of one note a briefing lists in 四 (a daily digest of a few hundred papers stays whole): a note citing
# 50,000 is a dump, and listing it whole made an 8.9 MB briefing. The note keeps every id, with a warning.
MAX_LISTED_IDS_PER_NOTE = 300

# Old-style archives (identifiers up to 0703); subject classes like math.AG are allowed after them.
_ARCHIVES = (
    "hep-th", "hep-ph", "hep-ex", "hep-lat", "astro-ph", "cond-mat", "gr-qc", "math-ph",
    "nucl-th", "nucl-ex", "quant-ph", "physics", "math", "cs", "nlin", "q-bio", "q-fin", "stat",
    "chao-dyn", "solv-int", "patt-sol", "adap-org", "comp-gas", "alg-geom", "dg-ga", "funct-an",
    "q-alg", "chem-ph", "atom-ph", "mtrl-th", "supr-con", "acc-phys", "ao-sci", "bayes-an",
    "cmp-lg", "plasm-ph",
)  # fmt: skip
_ARCHIVE_ALT = "|".join(sorted((re.escape(a) for a in _ARCHIVES), key=len, reverse=True))

_NEW_FULL = re.compile(r"(\d{4})\.(\d{4,5})(?:v\d+)?")
_OLD_FULL = re.compile(rf"({_ARCHIVE_ALT})(\.[A-Z]{{2}})?/(\d{{7}})(?:v\d+)?")
_PREFIX_RE = re.compile(r"^\s*arxiv\s*[: ]\s*", re.IGNORECASE)
_CARD_RE = re.compile(r"^(\d+)-(\d{4})-(\d{4,5})(?:v\d+)?\.md$", re.IGNORECASE)


def _new_style_ok(yymm_part: str, number: str) -> bool:
    yy, mm = int(yymm_part[:2]), int(yymm_part[2:])
    if not 1 <= mm <= 12 or int(number) == 0:
        return False
    stamp = int(yymm_part)
    if len(number) == 4:
        return 704 <= stamp <= 1412
    return stamp >= 1501 and yy >= 15


def _old_style_ok(digits: str) -> bool:
    yy, mm = int(digits[:2]), int(digits[2:4])
    if not 1 <= mm <= 12 or int(digits[4:]) == 0:
        return False
    # The old scheme ran from 9107 to 0703.
    return (yy >= 91 and yy * 100 + mm >= 9107) or yy * 100 + mm <= 703


def is_valid_arxiv_id(candidate: str) -> bool:
    """True if `candidate` is one well-formed arXiv id (optional `arXiv:` prefix and version)."""
    text = _PREFIX_RE.sub("", candidate.strip())
    m = _NEW_FULL.fullmatch(text)
    if m:
        return _new_style_ok(m.group(1), m.group(2))
    m = _OLD_FULL.fullmatch(text)
    return m is not None and _old_style_ok(m.group(3))


def strip_version(arxiv_id: str) -> str:
    """Drop a `vN` suffix and an `arXiv:` prefix: `arXiv:2609.23130v2` → `2609.23130`."""
    text = _PREFIX_RE.sub("", arxiv_id.strip())
    return re.sub(r"v\d+$", "", text)


_CACHED_UP_TO = 4096  # characters: sections and lines, not whole notes


def extract_arxiv_ids(text: str) -> list[str]:
    """Every valid arXiv id in `text`, without version, unique, in order of first appearance."""
    # A briefing asks about the same sections and lines from several angles; the answer never changes. Whole
    # notes are not cached: the cache would keep 8 192 of them alive (~200 MiB in each parse process).
    return (
        list(_extract_cached(text))
        if len(text) <= _CACHED_UP_TO
        else predigest_native.extract_arxiv_ids(text)
    )


@lru_cache(maxsize=8192)
def _extract_cached(text: str) -> tuple[str, ...]:
    return tuple(predigest_native.extract_arxiv_ids(text))


def _basename(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


def arxiv_id_from_card_name(filename: str) -> str | None:
    """`1417-2609-19969.md` → `2609.19969`; None if the name is not a valid card name."""
    m = _CARD_RE.match(_basename(filename))
    if not m or not _new_style_ok(m.group(2), m.group(3)):
        return None
    return f"{m.group(2)}.{m.group(3)}"


def card_number_from_name(filename: str) -> str | None:
    """`1417-2609-19969.md` → `1417`; None if the name is not a card name."""
    m = _CARD_RE.match(_basename(filename))
    return m.group(1) if m else None


@lru_cache(maxsize=1 << 16)  # ids recur across a window's notes: asked once per note each
def yymm(arxiv_id: str) -> tuple[int, int] | None:
    """(2000+YY, MM) of a valid new-style id, else None."""
    text = strip_version(arxiv_id)
    m = _NEW_FULL.fullmatch(text)
    if not m or not _new_style_ok(m.group(1), m.group(2)):
        return None
    return 2000 + int(m.group(1)[:2]), int(m.group(1)[2:])
