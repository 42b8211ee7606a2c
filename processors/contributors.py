"""The sources that can feed increments: notes and cards on the axis, the most relevant of them read whole."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from processors.briefing_request import Loader
from processors.models import Document, DocumentSummary, Relevance
from processors.reasons import ROLE_CODES
from processors.relevance import Weights
from processors.units import card_anchors


def read_whole(docs: Iterable[DocumentSummary], load: Loader | None) -> dict[str, Document]:
    """path → the whole document, loading those given only as summaries (a vanished one is left out)."""
    docs = list(docs)
    out = {d.path: d for d in docs if isinstance(d, Document)}
    missing = list(dict.fromkeys(d.path for d in docs if not isinstance(d, Document) and d.path not in out))
    if missing:
        if load is None:
            raise ValueError(f"{len(missing)} summaries need their text, but no loader was given")
        out.update((d.path, d) for d in load(missing))
    return out


def _most_relevant(
    eligible: Sequence[tuple[DocumentSummary, Relevance]], axis: str, limit: int
) -> list[tuple[DocumentSummary, Relevance]]:
    """The `limit` most relevant sources, cards anchored into the axis first, in their original order."""
    ranked = sorted(eligible, key=lambda dr: (not card_anchors(dr[0], axis), -dr[1].score, dr[0].path))
    chosen = {d.path for d, _ in ranked[:limit]}
    return [(d, r) for d, r in eligible if d.path in chosen]


@dataclass(frozen=True)
class Contributors:
    """Sources eligible for increments, the chosen ones whole, and every document read whole so far."""

    eligible: list[tuple[DocumentSummary, Relevance]]
    chosen: list[tuple[Document, Relevance]]
    whole: dict[str, Document]


def gather_contributors(
    kept: Sequence[DocumentSummary],
    weights: Weights,
    also_whole: Sequence[DocumentSummary],
    load: Loader | None,
    limit_for: tuple[str, int],
) -> Contributors:
    """Inbox notes and cards that are neither a role (baseline, reference, adjacent) nor low; `limit` read whole.

    `also_whole` (the baselines and work queues) are read in the same load.
    """
    axis, limit = limit_for
    eligible = [
        (d, weights.rel[d.path])
        for d in kept
        if d.kind in ("inbox", "paper_card")
        and weights.rel[d.path].code not in ROLE_CODES
        and d.path not in weights.low
    ]
    needed = _most_relevant(eligible, axis, limit)
    whole = read_whole([*(d for d, _ in needed), *also_whole], load)
    chosen = [(whole[d.path], r) for d, r in needed if d.path in whole]
    return Contributors(eligible=eligible, chosen=chosen, whole=whole)
