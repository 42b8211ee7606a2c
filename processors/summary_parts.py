"""A note's summary as the state keeps it since schema 8: split between its source facts' rows and `contents`.

The slim summary (`source_rows`), the term counts, a whole signature and the stated titles are rows of their own
(processors.source_facts); `contents` keeps only the rest (headings, the whole front matter, a signature of another
length): storing the summary whole there kept ~72 % of its bytes twice, the zstd of each checkpoint's share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core
from predigest_native import summary_rest

from processors.errors import MissingRowError
from processors.models import DocumentSummary
from processors.near_duplicates import NUM_PERM

_FIELDS = tuple(DocumentSummary.model_fields)
_TITLE_FIELDS = ("id", "title", "source", "strong", "rank")


def rest_of(summary_json: str | bytes) -> bytes:
    """What `contents` keeps of a summary; the summary whole when it is not the compact JSON object the parse
    writes (the rebuild then takes every field from it)."""
    rest = summary_rest(summary_json, NUM_PERM)
    if rest is not None:
        return rest
    return summary_json.encode() if isinstance(summary_json, str) else summary_json


@dataclass(frozen=True)
class SummaryRows:
    """One version's summary as the state holds it: its slim summary, `contents`' rest, and its rows; None for a
    row the state lacks (its `source_rows` or `contents` row: a bug, a partial repair, a hand edit)."""

    slim_json: str | bytes | None
    rest_json: str | bytes | None
    terms: Sequence[tuple[str, int]] = ()  # in their place's order (source_terms.k)
    signature: Sequence[int] | None = None  # a whole one (source_signatures)
    titled: Sequence[tuple[str, str, str, bool, int]] = ()  # (id, title, source, strong, rank), in order of n


def whole_summary(rows: SummaryRows) -> bytes:
    """The summary's JSON as the parse wrote it (its fields in the model's order): each field from `contents`'
    rest where it is there, else from its rows, else from the slim summary; ValueError when a row is missing."""
    if rows.slim_json is None or rows.rest_json is None:
        raise MissingRowError(
            f"its {'source' if rows.slim_json is None else 'contents'} row is missing from the state"
        )
    slim: Mapping[str, Any] = pydantic_core.from_json(rows.slim_json, cache_strings="keys")
    rest: Mapping[str, Any] = pydantic_core.from_json(rows.rest_json, cache_strings="keys")
    bulk: dict[str, Any] = {
        "terms": dict(rows.terms),
        "signature": list(rows.signature or ()),
        "titled": [dict(zip(_TITLE_FIELDS, t, strict=True)) for t in rows.titled],
    }
    out: dict[str, Any] = {}
    for name in _FIELDS:
        if name in rest:
            out[name] = rest[name]
        elif name in bulk:
            out[name] = bulk[name]
        elif name in slim:
            out[name] = slim[name]
    return pydantic_core.to_json(out, inf_nan_mode="null")
