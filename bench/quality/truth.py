"""Ground truth of a benchmark root: what each file and section is about, true titles, labelled discrepancies.

Built by bench.quality.builder from the real material and the hand labels committed beside the root specs;
written next to the briefings (`truth.json`) so that a reader can check any figure by hand.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class UnitTruth:
    """One section of a file (the text under one heading; '' is the text before any heading)."""

    heading: str
    number: str | None  # `§3` when the heading starts with a number (`3.`, `3️⃣`), as section refs may name it
    level: int
    ids: tuple[str, ...]
    axes: tuple[str, ...]  # the axes this section is on
    paper: str | None = None  # the one paper the section is about (an arXiv id), if it is about one
    body_chars: int = 0  # non-blank characters under the heading


@dataclass(frozen=True)
class FileTruth:
    path: str
    kind: str  # inbox | paper_card | work_queue | baseline | living
    event_time: datetime | None  # None for living documents (they are not windowed)
    whole: tuple[str, ...]  # the axes of the file taken whole (a bare-path source)
    units: tuple[UnitTruth, ...]
    ids: tuple[str, ...]  # every arXiv id the file cites
    baseline_axis: str | None = None


@dataclass(frozen=True)
class Scaffold:
    """A labelled piece of scaffolding: an item containing all of `all` (or any of `any`) is scaffolding."""

    kind: str
    any: tuple[str, ...] = ()
    all: tuple[str, ...] = ()

    def hit(self, text: str) -> bool:
        low = text.lower()
        if self.all and all(s.lower() in low for s in self.all):
            return True
        return any(s.lower() in low for s in self.any)


@dataclass(frozen=True)
class DiscrepancyLabel:
    """A labelled discrepancy: an emitted D-item whose text holds every string of `all` is this one.

    `real` is false for what looks like a discrepancy but is not (two rows sharing a venue cell).
    """

    id: str
    real: bool
    planted: bool
    all: tuple[str, ...]
    note: str
    suspect_ids: tuple[str, ...] = ()  # ids that are errors (a typo, a future id): neither new nor continued

    def hit(self, text: str) -> bool:
        """Every string of `all` occurs in the text; `a|b` is either of two strings."""
        low = text.lower()
        return all(any(alt.lower() in low for alt in s.split("|")) for s in self.all)


@dataclass(frozen=True)
class LivingSection:
    name: str  # the heading cleaned of emoji, keycaps, numbers and link residue
    heading: str  # as written
    boilerplate: bool
    ids: tuple[str, ...]


@dataclass
class RootTruth:
    name: str
    scored_axes: tuple[str, ...]
    titles: dict[str, tuple[str, ...]]  # arXiv id → its true title first, then accepted aliases
    files: dict[str, FileTruth]  # by path, the latest version of each (baselines added at run time)
    living: dict[str, tuple[LivingSection, ...]]  # axis → sections of its living document
    fits: dict[str, tuple[str, ...]]  # arXiv id → the living-document sections it fits (empty: none fits)
    scaffolds: tuple[Scaffold, ...]
    discrepancies: tuple[DiscrepancyLabel, ...]
    # What was labelled by hand, for the report and the docs.
    hand_labelled: dict[str, list[str]] = field(default_factory=dict)

    @property
    def suspect_ids(self) -> set[str]:
        return {i for d in self.discrepancies for i in d.suspect_ids}

    def to_json(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


_EMOJI = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u20E3\u2B00-\u2BFF\u00A9\u00AE]")
_ANCHOR_LINK = re.compile(r"\[[^\]]*\]\(#[^)]*\)")  # `[©️back👆🏻](#contents)`: navigation
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def clean_heading(text: str) -> str:
    """A heading as a reader names it: without emoji, keycap or § numbers, back-links, link targets, markup."""
    text = _ANCHOR_LINK.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _EMOJI.sub(" ", text)
    text = re.sub(r"[(（]\s*[)）]", "", text)
    text = re.sub(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s*", "", text)
    text = re.sub(r"[*_`#]", "", text)
    return " ".join(text.split())


def heading_number(text: str) -> str | None:
    """`§3` for `3. …`, `3️⃣ …` or `§3 …`; None for a heading without a number."""
    m = re.match(r"^\s*(?:§\s*)?(\d+(?:\.\d+)*)(?:\ufe0f?\u20e3|[.、)]|\s|$)", text)
    return f"§{m.group(1)}" if m else None
