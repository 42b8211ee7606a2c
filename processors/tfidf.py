"""A small TF-IDF vector space over term counts: sublinear tf, smoothed idf, cosine similarity."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import repeat
from operator import itemgetter, mul, truediv

Vector = dict[str, float]
_LOG = [0.0, *(math.log(c) for c in range(1, 256))]  # term counts are small integers: look their log up
_TF = [1.0 + x for x in _LOG]  # sublinear tf, 1 + log(c), of the same small counts
_WEIGHT = itemgetter(1)
# The loops below run in C (map, zip, sum, sorted) over the same floats in the same order as the plain
# comprehensions they replace: every vector and cosine is the same to the last bit (tests/processors/
# test_tokens_tfidf.py holds them equal), so no briefing changes with them.


# Document frequencies of the terms asked for (a term left out occurs in no document).
Frequencies = Callable[[Collection[str]], Mapping[str, int]]


class TfIdf:
    """Document frequencies of a corpus; turns term counts into unit-length TF-IDF vectors."""

    def __init__(self, corpus: Iterable[Mapping[str, int]]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for counts in corpus:
            n += 1
            df.update(counts.keys())
        self._setup(n, None)
        self._idf.update((t, self._weight(c)) for t, c in df.items())

    @classmethod
    def of(cls, n: int, frequencies: Frequencies) -> TfIdf:
        """The space of a corpus of `n` documents known by its frequencies, asked for only the terms it meets
        (a window of 100k notes holds far more terms than a briefing vectorises)."""
        space = cls.__new__(cls)
        space._setup(n, frequencies)
        return space

    def _setup(self, n: int, frequencies: Frequencies | None) -> None:
        self._n = n
        # Smoothed: a term the corpus never saw still gets a finite, high weight.
        self._unseen = math.log(n + 1) + 1.0
        self._idf: dict[str, float] = {}
        self._frequencies = frequencies

    def _weight(self, df: int) -> float:
        return math.log((self._n + 1) / (df + 1)) + 1.0 if df else self._unseen

    def learn(self, terms: Iterable[str]) -> None:
        """Ask the frequencies of the terms not asked yet, in one call (nothing to do for a whole corpus)."""
        if self._frequencies is None:
            return
        missing = [t for t in dict.fromkeys(terms) if t not in self._idf]
        if missing:
            found = self._frequencies(missing)
            self._idf.update((t, self._weight(found.get(t, 0))) for t in missing)

    def vector(self, counts: Mapping[str, int]) -> Vector:
        """The L2-normalised vector of `counts` (empty counts give an empty vector)."""
        # Known already, most often (a briefing asks its texts' terms first): a subset test in C, not a pass.
        if not counts.keys() <= self._idf.keys():
            self.learn(counts.keys())
        idf, unseen = self._idf, self._unseen
        values = counts.values()
        if values and (min(values) <= 0 or max(values) >= len(_TF)):
            raw = {
                t: (1.0 + (_LOG[c] if c < 256 else math.log(c))) * idf.get(t, unseen)
                for t, c in counts.items()
                if c > 0
            }
        else:
            tf = map(_TF.__getitem__, values)
            raw = dict(zip(counts, map(mul, tf, map(idf.get, counts, repeat(unseen))), strict=True))
        return unit_length(raw)


def heaviest(vec: Mapping[str, float], top: int) -> Vector:
    """`vec` cut to its `top` heaviest terms (ties in their order) and renormalised."""
    if len(vec) <= top:
        return dict(vec)
    return unit_length(dict(sorted(vec.items(), key=_WEIGHT, reverse=True)[:top]))


def unit_length(vec: Mapping[str, float]) -> Vector:
    values = vec.values()
    norm = math.sqrt(sum(map(mul, values, values)))
    return dict(zip(vec, map(truediv, values, repeat(norm)), strict=True)) if norm > 0 else {}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine of two normalised vectors (iterates over the smaller one)."""
    if len(a) > len(b):
        a, b = b, a
    total: float = sum(map(mul, a.values(), map(b.get, a, repeat(0.0))))
    return total


class NearestIndex:
    """Nearest vector by cosine, comparing only vectors that share one of the query's heaviest terms.

    Two unit vectors can only be close if they share weight, so candidates from an inverted index of
    terms stand in for a scan of every vector; `probe` bounds the terms looked up per query.
    """

    def __init__(self, probe: int = 16, common: int = 64, terms: int = 64) -> None:
        self._vectors: dict[str, Vector] = {}
        self._postings: dict[str, set[str]] = {}
        self._probe = probe
        self._common = common  # a term in more vectors than this finds everything and decides nothing
        # Between two notes the rare terms decide; the tail of a long vector only adds cost.
        self._terms = terms

    def add(self, key: str, vec: Vector) -> None:
        vec = heaviest(vec, self._terms)
        self._vectors[key] = vec
        for term in vec:
            self._postings.setdefault(term, set()).add(key)

    def nearest(self, vec: Vector, min_score: float) -> tuple[str, float] | None:
        """The closest stored key at or above `min_score`, or None."""
        vec = heaviest(vec, self._terms)
        heavy = sorted(vec, key=vec.__getitem__, reverse=True)[: self._probe]
        hits: Counter[str] = Counter()
        for t in heavy:
            posting = self._postings.get(t)
            if posting and len(posting) <= self._common:
                hits.update(posting)
        # Sharing a single heavy term rarely makes two unit vectors close; with many candidates, ask for two.
        candidates = set(hits) if len(hits) <= 8 else {k for k, n in hits.items() if n >= 2}
        best: tuple[str, float] | None = None
        for key in sorted(candidates):
            score = cosine(vec, self._vectors[key])
            if score >= min_score and (best is None or score > best[1]):
                best = (key, score)
        return best
