"""The reference of a source's scores against the axis profiles and of its evidence terms, as Python worked them
out before the compiled extension did (`processors.relevance.AxisSpace._profile_scores`, `evidence_of`)."""

from __future__ import annotations

from collections.abc import Mapping

from processors.relevance import K1, KEYWORD_SOFTNESS, LIVING_SHARE, AxisSpace, B


def profile_scores(
    space: AxisSpace, counts: Mapping[str, int], length: int, keyword_counts: Mapping[str, int] | None = None
) -> dict[str, float]:
    """Each axis's score in [0, 1]: keywords as a soft OR of their BM25 saturations, living terms by weight."""
    norm = K1 * (1 - B + B * (length / space._avg_length if length else 1.0))
    missing = dict.fromkeys(space.keywords, 1.0)
    coverage = dict.fromkeys(space.keywords, 0.0)
    index = space._profile_index()
    for t in index.keys() & counts.keys():
        c = counts[t]
        sat = c / (c + norm) if c else 0.0
        k = keyword_counts.get(t, c) if keyword_counts is not None else c
        keyword_sat = k / (k + norm) if k else 0.0
        for name, weight in index[t]:
            if weight is None:
                missing[name] *= (1.0 - keyword_sat) ** KEYWORD_SOFTNESS
            else:
                coverage[name] += weight * sat
    out: dict[str, float] = {}
    for name in space.keywords:
        share = LIVING_SHARE if space.living_terms.get(name) else 0.0
        out[name] = round((1.0 - share) * (1.0 - missing[name]) + share * coverage[name], 4)
    return out


def evidence(space: AxisSpace, counts: Mapping[str, int], axis: str, limit: int) -> tuple[str, ...]:
    """The axis profile's terms the counts use, most frequent first, ties by the term."""
    terms = frozenset(space.keywords.get(axis, ())) | space.living_terms.get(axis, {}).keys()
    return tuple(sorted(sorted(counts.keys() & terms), key=counts.__getitem__, reverse=True)[:limit])
