"""What one briefing is asked from: the axis window's documents, its living document, its history, its rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Protocol
from zoneinfo import ZoneInfo

from processors.arxiv_atom import NO_RECORDS, EnrichedId
from processors.briefing_names import briefing_basename
from processors.briefing_rules import BriefingRules
from processors.discrepancy_keys import DNumbers, registry
from processors.errors import BuildCancelledError
from processors.i18n import Lang
from processors.models import (
    AxisSpec,
    Briefing,
    Document,
    DocumentSummary,
    Rejection,
    TitledId,
    Trigger,
    WindowBounds,
)
from processors.reasons import UNREAD_CODES, RejectionCode
from processors.window_rows import WindowSource

_D_NUMBER = re.compile(r"(?<![A-Za-z0-9])D(\d{1,6})(?!\d)")

MAX_HISTORY_TITLES = 5000  # the most recent (id, title) pairs of earlier briefings compared for id conflicts

# Leaves out only a note whose stored text does not read back (the request lists it damaged).
Loader = Callable[[Sequence[str]], Sequence[Document]]


def max_d_number(texts: Iterable[str]) -> int:
    """The highest D number (`D199`) found in the texts, 0 if none."""
    return max((int(m) for t in texts for m in _D_NUMBER.findall(t)), default=0)


def cited_ids_of(briefing: Briefing) -> set[str]:
    """Every arXiv id a briefing mentions (the next window's anchored ids)."""
    ids = set(briefing.summary.new_arxiv) | set(briefing.summary.continued_arxiv)
    ids.update(e.id for e in briefing.arxiv)
    ids.update(i for inc in briefing.increments for i in inc.arxiv)
    return ids


def listed_titles(briefing: Briefing) -> list[TitledId]:
    """The (id, title) pairs a briefing's 四 listed, strong where the arXiv API gave the title."""
    name = briefing_basename(
        briefing.axis, briefing.window.end, briefing.trigger, briefing.window.end.tzinfo or UTC
    )
    return [
        TitledId(id=e.id, title=e.title, source=f"{name}.md", strong=e.metadata.source != "document")
        for e in briefing.arxiv
        if e.title and e.title != e.id
    ]


@dataclass(frozen=True)
class BriefingHistory:
    """What the axis's other briefings left: the ids and titles the earlier ones cited, and the D numbers
    every one used (by discrepancy key), so that a discrepancy keeps its number for the life of the axis."""

    cited_ids: frozenset[str] = frozenset()
    last_d_number: int = 0
    d_numbers: Mapping[str, int] = field(default_factory=dict)
    titles: tuple[TitledId, ...] = ()

    @classmethod
    def of(
        cls, earlier: Sequence[Briefing], baseline_texts: Iterable[str] = (), others: Sequence[Briefing] = ()
    ) -> BriefingHistory:
        """From the earlier briefings recorded here (oldest first), the texts of baseline notes (written
        elsewhere), and `others`: briefings of later windows or the other trigger, which count for D numbers
        only (a past window re-emitted must not reuse a number a later briefing gave something else)."""
        cited: set[str] = set()
        titles: dict[tuple[str, str], TitledId] = {}
        for b in earlier:
            cited |= cited_ids_of(b)
            titles.update(((t.id, t.title.casefold()), t) for t in listed_titles(b))
        texts = list(baseline_texts)
        numbers = registry(
            (d for b in [*earlier, *others] for d in b.discrepancies), texts, [max_d_number(texts)]
        )
        return cls(
            cited_ids=frozenset(cited),
            last_d_number=numbers.last,
            d_numbers=MappingProxyType(dict(numbers.by_key)),
            titles=tuple(list(titles.values())[-MAX_HISTORY_TITLES:]),
        )

    @property
    def numbers(self) -> DNumbers:
        """The D numbers to continue: known keys keep theirs, new ones follow `last_d_number`."""
        return DNumbers(by_key=self.d_numbers, last=self.last_d_number)


class StopToken(Protocol):
    """What tells a briefing's build to end between its steps (a `threading.Event`, set by the worker's stop)."""

    def is_set(self) -> bool: ...


class _Never:
    """The token of a build nothing stops (a one-off briefing, `explain`, the benchmarks)."""

    def is_set(self) -> bool:
        return False


@dataclass(frozen=True)
class BriefingRequest:
    """Everything `assemble_briefing` reads: the window as `source` (a stored one read as rows), or as
    `documents` and `superseded` in memory; summaries are fetched whole through `load`."""

    axis: AxisSpec
    trigger: Trigger
    window: WindowBounds
    generated_at: datetime
    zone: ZoneInfo
    documents: Sequence[DocumentSummary] = ()
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
    source: WindowSource | None = None  # instead of `documents` and `superseded`
    # Called between the window's reads and during its scan, the reader waiting: the store may drop what it cached.
    between_reads: Callable[[], None] = lambda: None
    # Looked at between the build's steps (`go_on`): a stop need not wait for a 100k window's build to end.
    stop: StopToken = field(default_factory=_Never)

    def go_on(self) -> None:
        """Between two steps of the build: BuildCancelledError once `stop` is set."""
        if self.stop.is_set():
            raise BuildCancelledError("the briefing's build was stopped")

    @property
    def all_axes(self) -> list[AxisSpec]:
        """The configured axes, this one included."""
        axes = list(self.axes) or [self.axis]
        return axes if self.axis.name in {a.name for a in axes} else [*axes, self.axis]

    @property
    def damaged(self) -> frozenset[str]:
        """The notes whose stored text did not read back: the rejected list them (code damaged), nothing else."""
        return frozenset(r.path for r in self.rejected if r.reason_code in UNREAD_CODES)

    def unread_code(self, path: str | None) -> RejectionCode | None:
        """Why the note at `path` is listed among the rejected as stored but not read back; None if it is not."""
        return next(
            (r.reason_code for r in self.rejected if r.path == path and r.reason_code in UNREAD_CODES), None
        )

    @property
    def living_map(self) -> Mapping[str, Document | None]:
        """Every axis's living document, this one's included."""
        return MappingProxyType({**self.other_living, self.axis.name: self.living})
