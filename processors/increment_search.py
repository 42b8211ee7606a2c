"""From the contributors' sections to the chosen increments: units, clusters, candidates, selection, entries."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from processors.briefing_rules import IncrementRules
from processors.increments import Candidate, Context, build, cluster_units, evaluate, select
from processors.models import Document, Increment, Relevance
from processors.relevance import AxisSpace
from processors.triage import star_ratings
from processors.unit_relevance import WeighedUnits, weigh_units
from processors.units import Unit, units_of


def axis_units(
    contributors: Sequence[tuple[Document, Relevance]], ctx: Context, space: AxisSpace
) -> WeighedUnits:
    """The contributors' units, each weighed by its own text against the axis profile."""
    units = [u for doc, rel in contributors for u in units_of(doc, ctx.axis, rel.stars, rel.score)]
    # A stored window's frequencies of every term the units will be vectorised by, asked once; each unit's
    # text is counted here once for its score and its vector too.
    space.learn_texts(f"{u.heading}\n{u.text}" for u in units)
    living = ctx.matcher.living
    cited = {i for s in living.sections for i in s.arxiv_ids} if living is not None else set()
    return weigh_units(units, space, ctx.axis, (cited, lambda text: bool(ctx.matcher.similar(text, limit=1))))


@dataclass(frozen=True)
class Found:
    """The units considered, every candidate, the chosen ones and their briefing entries (same order)."""

    units: list[Unit]
    candidates: list[Candidate]
    chosen: list[Candidate]
    increments: list[Increment]

    @property
    def used_docs(self) -> set[str]:
        return {u.doc_path for c in self.chosen for u in c.cluster.units}

    @property
    def candidate_docs(self) -> set[str]:
        return {u.doc_path for c in self.candidates for u in c.cluster.units}

    @property
    def chosen_units(self) -> list[Unit]:
        return [u for c in self.chosen for u in c.cluster.units]

    def suggested_section_of_units(self) -> dict[str, str]:
        """unit ref → the first section its increment is suggested into."""
        return {
            u.ref: inc.suggested_sections[0]
            for c, inc in zip(self.chosen, self.increments, strict=True)
            for u in c.cluster.units
            if inc.suggested_sections
        }


def find_increments(
    contributors: Sequence[tuple[Document, Relevance]],
    ctx: Context,
    space: AxisSpace,
    ids: tuple[Collection[str], Collection[str]],
    rules: IncrementRules,
) -> Found:
    """Cluster the on-axis units, rank the clusters, build the best `rules.max_count`.

    `ids` is (the window's new ids, the ones under suspicion): a suspect id is a unit of its own but never
    leads an increment.
    """
    _new_ids, suspect = ids
    weighed = axis_units(contributors, ctx, space)
    clusters = [
        c for c in cluster_units(weighed.on_axis, ctx, rules) if not (c.ids and set(c.ids) <= set(suspect))
    ]
    candidates = [evaluate(c, ctx, rules, weighed.best) for c in clusters]
    chosen = select(candidates, rules)
    stars = star_ratings(chosen, lambda c: bool(c.cluster.ids and ctx.matcher.citing(c.cluster.ids)))
    # Listed by their stars, then their score: an editor reads the five-star finds first.
    rated = sorted(zip(chosen, stars, strict=True), key=lambda cs: (-cs[1], -cs[0].score, cs[0].cluster.key))
    chosen = [c for c, _ in rated]
    increments = [build(c, rank, ctx, rules, n) for rank, (c, n) in enumerate(rated, start=1)]
    units = weighed.considered
    return Found(units=units, candidates=candidates, chosen=chosen, increments=increments)
