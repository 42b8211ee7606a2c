"""Increments: units clustered by arXiv id or by near-identical text, ranked, and turned into entries."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from processors.briefing_rules import CredibilityRules, IncrementRules
from processors.credibility import assess
from processors.i18n import Lang
from processors.key_points import Said, figures, has_figure, has_substance, highlights
from processors.living_doc import SectionMatcher
from processors.models import Increment
from processors.placement import PlacementQuery, place
from processors.tfidf import NearestIndex, Vector
from processors.tokens import terms
from processors.units import Unit

_HEADING_NUMBER = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")
_FLAG = ("⚠", "待核实")


@dataclass
class Cluster:
    key: str
    units: list[Unit]
    ids: list[str] = field(default_factory=list)

    @property
    def parts(self) -> list[str]:
        """Each unit's heading and text: what it is weighed and clustered by."""
        return [f"{u.heading}\n{u.text}" for u in self.units]

    @property
    def text(self) -> str:
        return "\n".join(self.parts)

    @property
    def docs(self) -> list[str]:
        return list(dict.fromkeys(u.doc_path for u in self.units))


@dataclass(frozen=True)
class Context:
    """What building increments needs to know about the axis, its living document and the window."""

    axis: str
    vectorise: Callable[[str], Vector]
    vectorise_parts: Callable[[Sequence[str]], Vector]  # of texts joined by newlines, from each text's counts
    new_ids: Collection[str]
    matcher: SectionMatcher
    living_text: str
    titles: Mapping[str, str]  # arXiv id → best known title (API, paper card, heading)
    verified: Mapping[str, bool]  # arXiv id → answered by the arXiv API (absent: enrichment off)
    credibility: CredibilityRules
    lang: Lang


def _find(parent: dict[str, str], x: str) -> str:
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def cluster_units(units: Sequence[Unit], ctx: Context, rules: IncrementRules) -> list[Cluster]:
    """Units about the same arXiv id form one cluster; id-less units join a close one or their note's."""
    parent: dict[str, str] = {}
    for u in units:
        for other in u.primary_ids[1:]:
            parent[_find(parent, other)] = _find(parent, u.primary_ids[0])
    by_id: dict[str, Cluster] = {}
    loose: list[Unit] = []
    for u in units:
        if not u.primary_ids and u.paper_title:
            # A paper named only by its title (daily digests often carry no id): the title is its identity.
            key = "title:" + " ".join(terms(u.paper_title))
            by_id.setdefault(key, Cluster(key=key, units=[])).units.append(u)
            continue
        if not u.primary_ids:
            loose.append(u)
            continue
        root = _find(parent, u.primary_ids[0])
        cluster = by_id.setdefault(root, Cluster(key=f"arxiv:{root}", units=[]))
        cluster.units.append(u)
        cluster.ids.extend(i for i in u.primary_ids if i not in cluster.ids)
    ids = NearestIndex()
    for key, c in by_id.items():
        ids.add(key, ctx.vectorise_parts(c.parts))
    per_doc: dict[str, Cluster] = {}
    for u in loose:
        hit = ids.nearest(ctx.vectorise(f"{u.heading}\n{u.text}"), rules.attach_similarity)
        if hit is not None:
            by_id[hit[0]].units.append(u)
        elif _has_substance([u]):
            per_doc.setdefault(u.doc_path, Cluster(key=f"doc:{u.doc_path}", units=[])).units.append(u)
    notes = NearestIndex()
    merged: dict[str, Cluster] = {}
    for key, cluster in per_doc.items():
        vec = ctx.vectorise_parts(cluster.parts)
        hit = notes.nearest(vec, rules.merge_similarity)
        if hit is None:
            merged[key] = cluster
            notes.add(key, vec)
        else:
            merged[hit[0]].units.extend(cluster.units)
    return [*by_id.values(), *merged.values()]


@dataclass(frozen=True)
class Candidate:
    cluster: Cluster
    relevance: float
    novelty: str
    adds_figures: bool
    substance: bool
    score: float


def _has_substance(units: Sequence[Unit]) -> bool:
    """Figures, versions or at least two points of their own: something an editor could write down."""
    return has_substance([Said(p) for u in units for p in u.points])


def _substance(cluster: Cluster) -> bool:
    if not any(u.points for u in cluster.units):
        return False  # a table row of title, authors and venue: listed in 四, nothing to write down
    return bool(cluster.ids) or cluster.key.startswith("title:") or _has_substance(cluster.units)


def _novel(cluster: Cluster, ctx: Context, rules: IncrementRules) -> bool:
    if cluster.ids:
        # An increment is new when the id it leads with is: one the living document, an earlier briefing or
        # the baseline already cites is continued, whatever new ids its sections also name.
        return cluster.ids[0] in ctx.new_ids
    if cluster.key.startswith("title:"):
        return cluster.units[0].paper_title.lower() not in ctx.living_text.lower()
    best = ctx.matcher.similar(cluster.text, limit=1, min_score=0.0)
    return not best or best[0][1] < rules.covered_similarity


def support(cluster: Cluster) -> float:
    """How many stand behind it, in [0, 1]: a second writer or note, a third; a paper card; an anchor."""
    writers = len({(u.writer or u.doc_path) for u in cluster.units})
    card = any(u.shape == "card" for u in cluster.units)
    anchored = any(u.anchors for u in cluster.units)
    return min(1.0, 0.5 * (writers - 1) + 0.25 * card + 0.25 * anchored)


@lru_cache(maxsize=8)
def _figures_of(text: str) -> frozenset[str]:
    """The living document's figures, read once for every candidate of its briefings."""
    return frozenset(figures(text))


def evaluate(cluster: Cluster, ctx: Context, rules: IncrementRules, window_best: float) -> Candidate:
    """Relevance, novelty and support of a cluster, and its ranking score."""
    # Relevance is the cluster's own units' (never their notes'), as a share of the window's most relevant unit,
    # so the ranking holds whatever the profile's absolute scores. Figures count, the number of points does not:
    # a digest's long entry is not worth more than a writer's one-line finding.
    rel = max(u.relevance for u in cluster.units)
    novel = _novel(cluster, ctx, rules)
    own = figures(cluster.text)
    adds = bool(own - _figures_of(ctx.living_text))
    novelty = 1.0 if novel and cluster.ids else 0.7 if novel else 0.4 if adds else 0.1
    score = (
        0.40 * (min(1.0, rel / window_best) if window_best > 0 else 0.0)
        + 0.25 * novelty
        + 0.10 * (1.0 if cluster.ids else 0.5 if cluster.key.startswith("title:") else 0.0)
        + 0.10 * min(1.0, len(own) / 3)
        + 0.15 * support(cluster)
    )
    return Candidate(
        cluster=cluster,
        relevance=round(rel, 4),
        novelty="new" if novel else "continued",
        adds_figures=adds,
        substance=_substance(cluster),
        score=round(score, 4),
    )


def select(candidates: Sequence[Candidate], rules: IncrementRules) -> list[Candidate]:
    """The best `max_count` candidates that add something; below `min_count`, weaker ones fill in.

    Every candidate is on the axis already (processors.unit_relevance); one with no point of its own never is
    chosen."""
    ranked = sorted(candidates, key=lambda c: (-c.score, c.cluster.key))
    floor = rules.score_share * ranked[0].score if ranked else 0.0
    strong = [
        c for c in ranked if c.substance and c.score >= floor and (c.novelty == "new" or c.adds_figures)
    ]
    chosen = strong[: rules.max_count]
    for c in ranked:
        if len(chosen) >= rules.min_count:
            break
        if c not in chosen and any(u.points for u in c.cluster.units):
            chosen.append(c)
    return sorted(chosen, key=lambda c: (-c.score, c.cluster.key))


def _title(cluster: Cluster, ctx: Context) -> str:
    if cluster.ids:
        known = next((ctx.titles[i] for i in cluster.ids if i in ctx.titles), "")
        if known:
            return known
        # A heading titles the paper only through the window's titles (a heading carrying the id, or heading a
        # section that opens with it): `安全事件关联` over `Detokenization Leaks（arXiv …）` is a topic.
        return cluster.ids[0]
    if cluster.key.startswith("title:"):
        # A newsletter section's (translated) heading names its paper; a row's or an item's section does not.
        first = cluster.units[0]
        heading = _HEADING_NUMBER.sub("", first.heading).strip() if first.shape == "section_paper" else ""
        return heading or first.paper_title
    doc_title = cluster.units[0].doc_title
    parts = [_HEADING_NUMBER.sub("", u.heading).strip() for u in cluster.units if u.heading != u.doc_title]
    parts = list(dict.fromkeys(p for p in parts if p))[:4]
    return f"{doc_title} — {' / '.join(parts)}" if parts else doc_title


def _points(cluster: Cluster, limit: int) -> list[str]:
    """Each unit's own points in turn (its first, then every unit's second …): a point is its unit's."""
    per_unit = [u.points for u in cluster.units]
    out: list[str] = []
    depth = 0
    while len(out) < limit and any(depth < len(p) for p in per_unit):
        for points in per_unit:
            if depth < len(points) and points[depth] not in out and len(out) < limit:
                out.append(points[depth])
        depth += 1
    return out


def build(candidate: Candidate, rank: int, ctx: Context, rules: IncrementRules, stars: int) -> Increment:
    """The briefing entry of a chosen cluster, with its stars (processors.triage)."""
    cluster = candidate.cluster
    points = _points(cluster, rules.max_points)
    urls = list(dict.fromkeys(url for u in cluster.units for url in u.urls))
    if cluster.ids and not any("arxiv.org" in url for url in urls):
        urls.insert(0, f"https://arxiv.org/abs/{cluster.ids[0]}")
    cred = assess(
        ids=cluster.ids,
        urls=urls,
        titles=[u.doc_title for u in cluster.units],
        supporting_docs=len(cluster.docs),
        flagged=any(flag in cluster.text for flag in _FLAG),
        verified=ctx.verified.get(cluster.ids[0]) if cluster.ids else None,
        rules=ctx.credibility,
        lang=ctx.lang,
    )
    title = _title(cluster, ctx)
    placed = place(
        ctx.matcher.living, PlacementQuery(title, tuple(points), tuple(cluster.ids), tuple(cluster.units))
    )
    theses = [u.thesis for u in cluster.units if has_figure(u.thesis)] + [u.thesis for u in cluster.units]
    return Increment(
        rank=rank,
        title=title,
        stars=stars,
        arxiv=list(cluster.ids),
        sources=list(dict.fromkeys(u.ref for u in cluster.units)),
        urls=urls,
        points=points,
        thesis=next((t for t in theses if t), ""),
        credibility=cred.text,
        novelty="new" if candidate.novelty == "new" else "continued",
        related_sections=[r.section for r in placed.relations],
        suggested_sections=[s.section for s in placed.suggestions],
        highlights=highlights(points),
        relations=placed.relations,
        suggestions=placed.suggestions,
        unplaced_reason=placed.unplaced,
        score=candidate.score,
    )
