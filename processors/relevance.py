"""How much a source matters to an axis: TF-IDF cosine against axis profiles, plus role labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from processors.models import AxisSpec, Document, DocumentSummary, Frozen, Relevance
from processors.tfidf import TfIdf, Vector, combine, cosine
from processors.tokens import term_counts, terms

# Configured keywords say what the axis is about; the living document says how it is written about.
KEYWORD_WEIGHT = 0.6
LIVING_WEIGHT = 0.4


class RelevanceRules(Frozen):
    """Thresholds on the cosine score; calibrated on the example root and the real corpus."""

    very_high: float = 0.15
    high: float = 0.08
    low: float = 0.03  # below this a source is "相关度低" and yields no increment on its own
    adjacent_ratio: float = 1.5  # another axis scoring this many times higher makes a source 邻接


def doc_counts(doc: DocumentSummary) -> Mapping[str, int]:
    """A document's index terms: computed at parse time, or now for a record parsed before they were."""
    if doc.terms or not isinstance(doc, Document):
        return doc.terms
    counts = term_counts(doc.text)
    counts.update(terms(doc.title) * 3)
    return counts


class AxisSpace:
    """A TF-IDF space over one window and the profile vector of every configured axis."""

    def __init__(
        self,
        documents: Sequence[DocumentSummary],
        axes: Sequence[AxisSpec],
        living: Mapping[str, Document | None],
    ) -> None:
        self._counts = {d.path: doc_counts(d) for d in documents}
        # The living document is the axis's vocabulary: all of it, not only its top terms.
        living_counts = {name: term_counts(d.text) for name, d in living.items() if d is not None}
        self.model = TfIdf([*self._counts.values(), *living_counts.values()])
        self.profiles: dict[str, Vector] = {}
        self._text_vectors: dict[str, Vector] = {}
        for axis in axes:
            keywords = Counter(t for k in (*axis.keywords, axis.name) for t in terms(k))
            parts = [(KEYWORD_WEIGHT, self.model.vector(keywords))]
            if axis.name in living_counts:
                parts.append((LIVING_WEIGHT, self.model.vector(living_counts[axis.name])))
            self.profiles[axis.name] = combine(parts)

    def vector_of(self, doc: DocumentSummary) -> Vector:
        counts = self._counts.get(doc.path)
        return self.model.vector(counts if counts is not None else doc_counts(doc))

    def vector_of_text(self, text: str) -> Vector:
        # The same section text is asked for by clustering, ranking and section matching: vectorise it once.
        vec = self._text_vectors.get(text)
        if vec is None:
            vec = self._text_vectors[text] = self.model.vector(term_counts(text))
        return vec

    def scores(self, doc: DocumentSummary) -> dict[str, float]:
        """Cosine of the document against every axis profile."""
        vec = self.vector_of(doc)
        return {name: round(cosine(vec, profile), 4) for name, profile in self.profiles.items()}


def declared_axes(doc: DocumentSummary) -> tuple[set[str], set[str]]:
    """(axes the document says it belongs to, axes it is anchored into) from its front matter."""
    declared = set(doc.axes)
    primary = doc.front_matter.get("primary")
    if isinstance(primary, str) and primary.strip():
        declared.add(primary.strip())
    anchors = doc.front_matter.get("anchors")
    anchored = {str(k).strip() for k in anchors} if isinstance(anchors, dict) else set()
    return declared, anchored


# Built once per source of a window that can hold 100k: the values are ours, so no validation pass.
def relevance(
    doc: DocumentSummary, axis: str, scores: Mapping[str, float], rules: RelevanceRules | None = None
) -> Relevance:
    """The label, stars and score of `doc` for `axis`: roles first, then the cosine thresholds."""
    r = rules or RelevanceRules()
    own = scores.get(axis, 0.0)
    if doc.kind == "baseline":
        return Relevance.model_construct(
            label="基线" if doc.baseline_axis == axis else "参考", stars=0, score=own
        )
    if doc.kind == "work_queue":
        return Relevance.model_construct(label="参考", stars=0, score=own)
    declared, anchored = declared_axes(doc)
    here = axis in declared or axis in anchored
    elsewhere = bool(declared) and not here
    best_other = max((v for k, v in scores.items() if k != axis), default=0.0)
    if elsewhere or (not here and best_other >= r.high and best_other > own * r.adjacent_ratio):
        return Relevance.model_construct(label="邻接", stars=0, score=own)
    stars = 5 if own >= r.very_high else 4 if own >= r.high else 3
    if axis in anchored:
        stars = max(stars, 4)  # a card anchored into a section of this axis is never marginal
    label = {5: "极高", 4: "高", 3: "中"}[stars]
    return Relevance.model_construct(label=label, stars=stars, score=own)


def is_low(rel: Relevance, rules: RelevanceRules | None = None) -> bool:
    """True for a scored source too far from the axis to yield an increment on its own."""
    return rel.stars == 3 and rel.score < (rules or RelevanceRules()).low
