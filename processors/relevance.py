"""How much a source matters to an axis: BM25 of the note against each axis profile, plus roles, as codes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from predigest_native import ProfileScores

from processors.briefing_rules import RelevanceRules
from processors.fan_out import keyword_terms
from processors.i18n import Lang, relevance_label
from processors.models import AxisSpec, Document, DocumentSummary, Relevance, built
from processors.reasons import RelevanceCode
from processors.terms import read_terms, term_counts
from processors.tfidf import TfIdf, Vector
from processors.tokens import (
    TermParts,
    axis_terms,
    merge_terms,
    normalise,
    note_index,
    note_terms,
    terms,
    token_counts,
)
from processors.window_rows import SourceRow, WindowStatistics, statistics_of

# Configured keywords say what the axis is about; the living document says how it is written about.
LIVING_SHARE = 0.4
KEYWORD_SOFTNESS = 0.5  # soft-OR exponent: one keyword saturated gives ~0.7 keyword evidence, not 1.0
LIVING_TERMS = 40  # the living document's most characteristic terms that join its axis profile
EVIDENCE_TERMS = 8  # the profile terms a source entry names as the evidence behind its score
K1, B = 1.2, 0.75  # BM25's usual term saturation and length normalisation


def doc_counts(doc: DocumentSummary, keep: frozenset[str]) -> Mapping[str, int]:
    """A document's relevance terms: kept at parse time, or now, the same way, for a record parsed before."""
    if doc.terms or not isinstance(doc, Document):
        return doc.terms
    return note_terms(note_index(token_counts(normalise(doc.text)), doc.title), keep)


def bm25_length(doc: DocumentSummary, counts: Mapping[str, int]) -> int:
    """The length BM25 normalises a source's counts by: its tokens, else (an older record) its counts' sum."""
    return doc.length or sum(counts.values())


class AxisSpace:
    """The window's term statistics, each axis's profile as a weighted query, and TF-IDF for texts.

    A note's score for an axis is 0.6 × the soft-OR of its keyword terms' BM25 saturations + 0.4 × the
    weighted share of the living document's characteristic terms it uses: a number in [0, 1] that a long
    note does not dilute, as a cosine does. Keywords carry no idf: they are the operator's statement of
    the axis, however common in its window.
    """

    def __init__(
        self,
        documents: Sequence[DocumentSummary],
        axes: Sequence[AxisSpec],
        living: Mapping[str, Document | None],
    ) -> None:
        """The space of sources held in memory (the window's kept ones)."""
        keep = keyword_terms(tuple(axes))  # what the parse stage kept besides a note's top terms
        self._counts = {d.path: doc_counts(d, keep) for d in documents}
        self._lengths = {d.path: bm25_length(d, self._counts[d.path]) for d in documents}
        stats = statistics_of(list(self._counts.values()), list(self._lengths.values()))
        self._setup(stats, axes, living)

    @classmethod
    def of(
        cls, stats: WindowStatistics, axes: Sequence[AxisSpec], living: Mapping[str, Document | None]
    ) -> AxisSpace:
        """The space of a window known by its statistics (a stored one, read as rows): sources are then scored
        by their profile terms (`scores_of`)."""
        space = cls.__new__(cls)
        space._counts, space._lengths = {}, {}
        space._setup(stats, axes, living)
        return space

    def _setup(
        self, stats: WindowStatistics, axes: Sequence[AxisSpec], living: Mapping[str, Document | None]
    ) -> None:
        self._keep = keyword_terms(tuple(axes))
        # The living document is the axis's vocabulary: all of it, not only its top terms.
        living_counts = {name: term_counts(d.text) for name, d in living.items() if d is not None}
        living_df: Counter[str] = Counter()
        for c in living_counts.values():
            living_df.update(c.keys())

        def frequencies(terms: Collection[str]) -> dict[str, int]:
            found = stats.frequencies(terms)
            return {t: found.get(t, 0) + living_df[t] for t in terms if t in found or t in living_df}

        self.model = TfIdf.of(stats.documents + len(living_counts), frequencies)
        self.model.learn(living_df)
        self._avg_length = stats.average_length
        self._text_vectors: dict[str, Vector] = {}
        # A unit's text is counted by its score, by whether it names the axis and by clustering: count it once.
        self._text_parts: dict[str, TermParts] = {}
        self._text_counts: dict[str, Counter[str]] = {}
        self._whole_counts: dict[str, dict[str, int]] = {}
        # A text's normalised form, until its keywords are read whole from it (`_unit_counts`).
        self._norms: dict[str, str] = {}
        self.keywords: dict[str, tuple[str, ...]] = {}
        self.living_terms: dict[str, dict[str, float]] = {}
        self._index: dict[str, list[tuple[str, float | None]]] | None = None
        self._scorer: ProfileScores | None = None
        self._axis_numbers: dict[str, int] = {}
        self._phrases = _phrase_terms(axes)
        for axis in axes:
            self.keywords[axis.name] = axis_terms(axis.keywords, axis.name)
            if axis.name in living_counts:
                tfidf = self.model.vector(living_counts[axis.name])
                top = sorted(tfidf.items(), key=lambda kv: -kv[1])[:LIVING_TERMS]
                total = sum(w for _, w in top) or 1.0
                self.living_terms[axis.name] = {t: w / total for t, w in top}

    @property
    def profile_terms(self) -> frozenset[str]:
        """Every term of every axis profile: all that a source's score and evidence are made of."""
        return frozenset(self._profile_index())

    def _profile_index(self) -> dict[str, list[tuple[str, float | None]]]:
        """Profile term → (axis, living weight, or None for a keyword), one entry per occurrence."""
        if self._index is None:
            index: dict[str, list[tuple[str, float | None]]] = {}
            for name, keyword_terms in self.keywords.items():
                for t in keyword_terms:
                    index.setdefault(t, []).append((name, None))
                for t, w in self.living_terms.get(name, {}).items():
                    index.setdefault(t, []).append((name, w))
            self._index = index
        return self._index

    def _native(self) -> ProfileScores:
        """The profiles as the compiled extension scores with them (axes numbered in `keywords`' order)."""
        if self._scorer is None:
            number = {name: i for i, name in enumerate(self.keywords)}
            index = [(t, [(number[a], w) for a, w in e]) for t, e in self._profile_index().items()]
            shares = [LIVING_SHARE if self.living_terms.get(name) else 0.0 for name in self.keywords]
            constants = (K1, B, KEYWORD_SOFTNESS)
            self._scorer = ProfileScores(list(self.keywords), index, shares, self._avg_length, constants)
        return self._scorer

    def _profile_scores(
        self, counts: Mapping[str, int], length: int, keyword_counts: Mapping[str, int] | None = None
    ) -> dict[str, float]:
        # Scored once per note of a window that can hold 100k, natively (~1 µs, not ~7): only the profile terms
        # the note uses contribute, each through BM25's saturation of its count, in [0, 1); keywords as a soft
        # OR (one used throughout a note is as strong as several used once), the living terms by their weight.
        # A unit's keyword evidence may count fewer occurrences than its vocabulary (`unit_score`).
        return self._native().scores(counts, length, keyword_counts)

    def scores(self, doc: DocumentSummary) -> dict[str, float]:
        """The document's [0, 1] score against every axis profile."""
        counts = self._counts.get(doc.path)
        if counts is None:
            counts = doc_counts(doc, self._keep)
        return self._profile_scores(counts, self._lengths.get(doc.path) or bm25_length(doc, counts))

    def scores_of(self, hits: Mapping[str, int], length: int) -> dict[str, float]:
        """A source's scores from its counts of the profile terms (`profile_terms`) and its BM25 length."""
        return self._profile_scores(hits, length)

    def evidence_of(
        self, counts: Mapping[str, int], axis: str, limit: int = EVIDENCE_TERMS
    ) -> tuple[str, ...]:
        """The axis profile's terms a source uses, most frequent first, from its counts (of its profile terms, or
        all of them): what its score was made of."""
        number = self._axis_numbers.get(axis)
        if number is None:
            number = self._axis_numbers[axis] = (
                list(self.keywords).index(axis) if axis in self.keywords else -1
            )
        # Most frequent first, ties by the term, natively (~1 µs, not ~2 a source of a 100k window); the profile's
        # own strings.
        return self._native().evidence(counts, number, limit) if number >= 0 else ()

    def unit_score(self, text: str, axis: str) -> tuple[float, int]:
        """(a unit's score against one axis profile, its length in terms), keywords of several terms matched
        whole.

        Such a keyword is indexed by its terms (`视觉语言` → 视觉, 觉语, 语言; `vision-language` → vision,
        language): over a note a stray `语言` or `language` weighs little, but in a paragraph-sized unit one
        `自然语言处理` or `Natural Language Processing` would count as the keyword. A unit's terms of such
        keywords count as keyword evidence only as often as the whole keyword occurs (a term that is a keyword
        of its own still counts alone); as the living document's vocabulary they count in full.
        """
        counts, whole = self._unit_counts(text)
        length = sum(counts.values())
        return self._profile_scores(counts, length, whole)[axis], length

    def _term_parts(self, text: str) -> TermParts:
        parts = self._text_parts.get(text)
        if parts is None:
            parts, norm = read_terms(text)
            self._text_parts[text] = parts
            if norm is not None and self._phrases:
                self._norms[text] = norm  # `_unit_counts` reads it, not normalising the text a second time
        return parts

    def _term_counts(self, text: str) -> Counter[str]:
        """`term_counts(text)`, counted once per text of the window (callers only read it)."""
        counts = self._text_counts.get(text)
        if counts is None:
            counts = self._text_counts[text] = merge_terms([self._term_parts(text)])
        return counts

    def _unit_counts(self, text: str) -> tuple[Counter[str], dict[str, int]]:
        """(a text's term counts, its counts of the terms of several-term keywords, as whole keywords)."""
        counts = self._term_counts(text)
        whole = self._whole_counts.get(text)
        if whole is None:
            whole = self._whole_counts[text] = {}
            if self._phrases:
                norm = self._norms.pop(text, None)
                norm = normalise(text) if norm is None else norm
                found: dict[re.Pattern[str], int] = {}  # a keyword's pattern is shared by each of its terms
                for term, patterns in self._phrases.items():
                    if term in counts:
                        whole[term] = min(counts[term], sum(_occurrences(p, norm, found) for p in patterns))
        return counts, whole

    def names_axis(self, text: str, axis: str) -> bool:
        """Whether the text uses one of the axis's keywords (several-term keywords whole)."""
        counts, whole = self._unit_counts(text)
        return any(whole.get(t, counts.get(t, 0)) > 0 for t in self.keywords.get(axis, ()))

    def mention_level(self, length: float, axis: str) -> float:
        """The score a text of `length` terms gets from one occurrence of the axis's most favoured keyword."""
        terms_ = self.keywords.get(axis, ())
        return max((self._profile_scores({t: 1}, round(length))[axis] for t in terms_), default=0.0)

    def learn_texts(self, texts: Iterable[str]) -> None:
        """Ask the window's frequencies of the terms of `texts` in one go (the units a briefing will vectorise)."""
        self.model.learn(chain.from_iterable(map(self._term_counts, texts)))

    def vector_of_text(self, text: str) -> Vector:
        # The same section text is asked for by clustering, ranking and section matching: vectorise it once.
        vec = self._text_vectors.get(text)
        if vec is None:
            vec = self._text_vectors[text] = self.model.vector(self._term_counts(text))
        return vec

    def vector_of_parts(self, parts: Sequence[str]) -> Vector:
        """`vector_of_text` of the parts joined by newlines (a cluster of units), from the parts' own counts."""
        text = "\n".join(parts)
        vec = self._text_vectors.get(text)
        if vec is None:
            counts = merge_terms([self._term_parts(p) for p in parts])
            vec = self._text_vectors[text] = self.model.vector(counts)
        return vec


def _occurrences(phrase: tuple[str, re.Pattern[str]], norm: str, found: dict[re.Pattern[str], int]) -> int:
    """How often a keyword of several terms (its first word, its pattern) occurs whole in a normalised text."""
    first, pattern = phrase
    n = found.get(pattern)
    if n is None:
        # Not there without its first word: the pattern opens with a lookbehind tried at every character.
        n = found[pattern] = len(pattern.findall(norm)) if first in norm else 0
    return n


def _phrase_terms(axes: Sequence[AxisSpec]) -> dict[str, tuple[tuple[str, re.Pattern[str]], ...]]:
    """Term → the keywords of several terms that contain it, as patterns (`语言` → `视觉语言`, `language` →
    `vision-language`); a term that is a keyword of its own (`video`) is left out."""
    single = {terms(k)[0] for axis in axes for k in axis.keywords if len(terms(k)) == 1}
    out: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for axis in axes:
        for keyword in axis.keywords:
            parts = terms(keyword)
            if len(parts) < 2:
                continue
            words = re.findall(r"\w+", normalise(keyword))
            # `KV cache`, `KV-cache`, `key-value (KV) cache`: the words in order, a little punctuation between.
            pattern = re.compile(
                r"(?<![a-z0-9])" + r"[\W_]{0,3}".join(map(re.escape, words)) + r"(?![a-z0-9])"
            )
            for t in parts:
                if t not in single:
                    out.setdefault(t, []).append((words[0], pattern))
    return {t: tuple(dict.fromkeys(p)) for t, p in out.items()}


def declared_axes(doc: DocumentSummary) -> tuple[set[str], set[str]]:
    """(axes the document says it belongs to, axes it is anchored into) from its front matter."""
    declared = set(doc.axes)
    primary = doc.front_matter.get("primary")
    if isinstance(primary, str) and primary.strip():
        declared.add(primary.strip())
    anchors = doc.front_matter.get("anchors")
    anchored = {str(k).strip() for k in anchors} if isinstance(anchors, dict) else set()
    return declared, anchored


STARS: dict[RelevanceCode, int] = {"very_high": 5, "high": 4, "medium": 3, "low": 2}  # roles have none


def relevance_code(
    doc: DocumentSummary, axis: str, scores: Mapping[str, float], rules: RelevanceRules
) -> RelevanceCode:
    """A role (baseline, reference, adjacent) or the band of the axis score."""
    own = scores.get(axis, 0.0)
    if doc.kind == "baseline":
        return "baseline" if doc.baseline_axis == axis else "reference"
    if doc.kind == "work_queue":
        return "reference"
    declared, anchored = declared_axes(doc)
    declared &= (
        scores.keys()
    )  # an axis that is not configured claims nothing: the note is weighed on its text
    here = axis in declared or axis in anchored
    if declared and not here:  # it claims other axes only
        return "adjacent"
    if not here:  # it claims none: another axis's profile may still claim it (the best other's score)
        best_other = max([v for k, v in scores.items() if k != axis], default=0.0)
        if best_other >= rules.high and best_other > own * rules.adjacent_ratio:
            return "adjacent"
    if own >= rules.very_high:
        return "very_high"
    if own >= rules.high or axis in anchored:  # a card anchored into a section of this axis is never marginal
        return "high"
    return "medium" if own >= rules.low else "low"


# Built once per source of a window that can hold 100k: the values are ours, so no validation pass.
def relevance(
    doc: DocumentSummary,
    axis: str,
    scores: Mapping[str, float],
    rules: RelevanceRules | None = None,
    lang: Lang = "zh",
    terms: tuple[str, ...] = (),
) -> Relevance:
    """The code, label (in `lang`), stars and score of `doc` for `axis`, with the terms behind the score."""
    code = relevance_code(doc, axis, scores, rules or RelevanceRules())
    return built(
        Relevance,
        {
            "label": relevance_label(code, lang),
            "code": code,
            "stars": STARS.get(code, 0),
            "score": scores.get(axis, 0.0),
            "terms": terms,
        },
    )


@dataclass(frozen=True)
class Scorer:
    """Each source's relevance to one axis, from its row: scores against every axis profile, then its code."""

    space: AxisSpace
    axis: str
    rules: RelevanceRules
    lang: Lang = "zh"

    def weigh(self, row: SourceRow) -> tuple[dict[str, float], Relevance]:
        """(the source's score against every axis profile, its relevance to this axis)."""
        scores = self.space.scores_of(row.hits, row.length)
        # The profile's own strings (`evidence_of`): a window's relevances share them, not a copy a source.
        evidence = self.space.evidence_of(row.hits, self.axis)
        return scores, relevance(row.doc, self.axis, scores, self.rules, self.lang, evidence)
