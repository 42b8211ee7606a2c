"""Text normalisation for exact-duplicate detection."""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Markdown markup that does not change what a note says: emphasis, code ticks, headings, quotes, tables.
_NOISE_RE = re.compile(r"[*_`#>|~\[\]]+|-{3,}|={3,}|^\s*[-+]\s+", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """NFKC, lowercase, markdown noise removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _NOISE_RE.sub(" ", text)
    return _SPACE_RE.sub(" ", text).strip()


def text_hash(text: str) -> str:
    """sha256 hex digest of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8", errors="replace")).hexdigest()
