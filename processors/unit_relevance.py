"""Relevance per unit: a unit is on the axis by its own text, never by its note's.

Every unit of the contributing notes is scored against the axis profile (`AxisSpace.unit_evidence`: the
configured keywords, CJK ones matched whole, and the living document's vocabulary). A unit has substantial
on-axis evidence when it scores more than one mention of the axis's most favoured keyword gives a unit of the
window's average length: a keyword once in a long abstract is a passing mention (one `视频` in an NLP paper,
one `inference` in a chat-bot paper), once in a one-line finding (`P99 TTFT 降低 35%`) or twice, or with the
living document's vocabulary, it is evidence. The bar comes from the profile and the window, not from a
constant tuned on a corpus. A unit written like one of the living document's sections (its TF-IDF cosine
to the section clears the section matcher's own floor: `DSpark 投机解码 85% 加速` beside `§4.1 投机解码`) is on
the axis without naming a keyword: keywords are hints, not a gate. In a note filed under the axis (its front
matter declares it, or its title names it) one mention of its own is enough: the writer has said what the note
is about, and the unit agrees. A paper card anchored into the axis and a paper the living document already
cites are on the axis by that fact. Other units drop out, however relevant their note: a mixed digest
contributes only its on-axis sections, rows and items, and an off-topic item of an on-topic note drops too.

Bounded: the units of one window that go on to clustering are at most `MAX_WINDOW_UNITS`, the most relevant.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from processors.relevance import AxisSpace
from processors.units import Unit

MAX_WINDOW_UNITS = 600
_MARGIN = 1e-3  # scores are rounded to 4 places: a single mention must not pass by rounding


@dataclass(frozen=True)
class WeighedUnits:
    """The units with any evidence for the axis (the D-item detectors read them) and, of those, the ones on
    the axis, in the notes' order."""

    considered: list[Unit]
    on_axis: list[Unit]

    @property
    def best(self) -> float:
        """The most relevant unit's score: the window's reference for ranking."""
        return max((u.relevance for u in self.on_axis), default=0.0)


def paper_keys(u: Unit) -> list[str]:
    """What identifies the paper a unit is about across notes: its ids, else the title it is named by."""
    return list(u.primary_ids) or ([f"title:{u.paper_title.casefold()}"] if u.paper_title else [])


def weigh_units(
    units: Sequence[Unit],
    space: AxisSpace,
    axis: str,
    living: tuple[Collection[str], Callable[[str], bool]],
) -> WeighedUnits:
    """Each unit with its own relevance; those with substantial on-axis evidence, or about a paper that has it
    in some unit (Kimi k1.5 is on the axis by one newsletter's `推理`, and so is a reading note about it that
    names no keyword).

    `living` is (the ids the living document cites, whether a text is close to one of its sections)."""
    cited, close = living
    scored = [(u, *space.unit_score(f"{u.heading}\n{u.text}", axis)) for u in units]
    passing = space.mention_level(sum(n for _, _, n in scored) / len(scored), axis) if scored else 0.0
    considered: list[tuple[Unit, bool]] = []
    evident_papers: set[str] = set()
    for u, score, _ in scored:
        anchored = bool(u.anchors) or any(i in cited for i in u.primary_ids)
        if score <= 0 and not anchored and not u.primary_ids and not u.paper_title:
            continue
        text = f"{u.heading}\n{u.text}"
        # A note filed under the axis (declared in its front matter, or the axis named in its title) vouches for
        # a unit that names the axis itself, once: `安全事件关联` in `jay 安全 × 推理 × RAG`, `axes: [inference]`.
        filed = (u.declared or space.names_axis(u.doc_title, axis)) and space.names_axis(text, axis)
        evident = anchored or filed or score > passing + _MARGIN or close(text)
        considered.append((u.model_copy(update={"relevance": score}), evident))
        if evident:
            evident_papers.update(paper_keys(u))
    on_axis = [u for u, evident in considered if evident or evident_papers.intersection(paper_keys(u))]
    if len(on_axis) > MAX_WINDOW_UNITS:
        kept = {id(u) for u in sorted(on_axis, key=lambda u: -u.relevance)[:MAX_WINDOW_UNITS]}
        on_axis = [u for u in on_axis if id(u) in kept]  # in the notes' order: sources read in order
    return WeighedUnits(considered=[u for u, _ in considered], on_axis=on_axis)
