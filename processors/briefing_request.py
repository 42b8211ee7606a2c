"""What one briefing is asked from: the axis window's documents, its living document, its history, its rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from zoneinfo import ZoneInfo

from pydantic import Field

from processors.arxiv_atom import NO_RECORDS, EnrichedId
from processors.credibility import CredibilityRules
from processors.i18n import Lang
from processors.increments import IncrementRules
from processors.models import (
    AxisSpec,
    Briefing,
    Document,
    DocumentSummary,
    Frozen,
    Rejection,
    Trigger,
    WindowBounds,
)
from processors.relevance import RelevanceRules

_D_NUMBER = re.compile(r"(?<![A-Za-z0-9])D(\d{1,6})(?!\d)")

Loader = Callable[[Sequence[str]], Sequence[Document]]


class BriefingRules(Frozen):
    """Every tunable of the briefing logic (the increment range is `increments.min_count/max_count`)."""

    relevance: RelevanceRules = RelevanceRules()
    increments: IncrementRules = IncrementRules()
    credibility: CredibilityRules = CredibilityRules()
    near_duplicate_threshold: float = Field(0.8, gt=0.0, le=1.0)


def max_d_number(texts: Iterable[str]) -> int:
    """The highest D number (`D199`) found in the texts, 0 if none."""
    return max((int(m) for t in texts for m in _D_NUMBER.findall(t)), default=0)


def cited_ids_of(briefing: Briefing) -> set[str]:
    """Every arXiv id a briefing mentions (the next window's anchored ids)."""
    ids = set(briefing.summary.new_arxiv) | set(briefing.summary.continued_arxiv)
    ids.update(e.id for e in briefing.arxiv)
    ids.update(i for inc in briefing.increments for i in inc.arxiv)
    return ids


@dataclass(frozen=True)
class BriefingHistory:
    """What the axis's earlier briefings left: the ids they cited and the highest D number they used."""

    cited_ids: frozenset[str] = frozenset()
    last_d_number: int = 0

    @classmethod
    def of(cls, earlier: Sequence[Briefing], baseline_texts: Iterable[str] = ()) -> BriefingHistory:
        """From the earlier briefings recorded here and the texts of baseline notes (written elsewhere)."""
        cited: set[str] = set()
        for b in earlier:
            cited |= cited_ids_of(b)
        last = max(
            max_d_number(baseline_texts),
            max((max_d_number(d.id for d in b.discrepancies) for b in earlier), default=0),
        )
        return cls(cited_ids=frozenset(cited), last_d_number=last)


@dataclass(frozen=True)
class BriefingRequest:
    """Everything `assemble_briefing` reads; `documents` may be summaries, fetched whole through `load`."""

    axis: AxisSpec
    trigger: Trigger
    window: WindowBounds
    generated_at: datetime
    zone: ZoneInfo
    documents: Sequence[DocumentSummary]
    living: Document | None = None
    axes: Sequence[AxisSpec] = ()
    other_living: Mapping[str, Document | None] = field(default_factory=dict)
    superseded: Sequence[DocumentSummary] = ()
    rejected: Sequence[Rejection] = ()
    history: BriefingHistory = BriefingHistory()
    arxiv_records: Mapping[str, EnrichedId] = field(default_factory=lambda: NO_RECORDS)
    load: Loader | None = None
    lang: Lang = "zh"
    rules: BriefingRules = field(default_factory=BriefingRules)

    @property
    def all_axes(self) -> list[AxisSpec]:
        """The configured axes, this one included."""
        axes = list(self.axes) or [self.axis]
        return axes if self.axis.name in {a.name for a in axes} else [*axes, self.axis]

    @property
    def living_map(self) -> Mapping[str, Document | None]:
        """Every axis's living document, this one's included."""
        return MappingProxyType({**self.other_living, self.axis.name: self.living})
