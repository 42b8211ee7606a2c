"""A small TF-IDF vector space over term counts: sublinear tf, smoothed idf, cosine similarity."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

Vector = dict[str, float]


class TfIdf:
    """Document frequencies of a corpus; turns term counts into unit-length TF-IDF vectors."""

    def __init__(self, corpus: Iterable[Mapping[str, int]]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for counts in corpus:
            n += 1
            df.update(counts.keys())
        self._n = n
        self._df = df

    def idf(self, term: str) -> float:
        # Smoothed: a term the corpus never saw still gets a finite, high weight.
        return math.log((self._n + 1) / (self._df.get(term, 0) + 1)) + 1.0

    def vector(self, counts: Mapping[str, int]) -> Vector:
        """The L2-normalised vector of `counts` (empty counts give an empty vector)."""
        raw = {t: (1.0 + math.log(c)) * self.idf(t) for t, c in counts.items() if c > 0}
        return normalise(raw)


def normalise(vec: Mapping[str, float]) -> Vector:
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {t: v / norm for t, v in vec.items()} if norm > 0 else {}


def combine(weighted: Iterable[tuple[float, Mapping[str, float]]]) -> Vector:
    """A normalised weighted sum of vectors."""
    out: dict[str, float] = {}
    for weight, vec in weighted:
        for t, v in vec.items():
            out[t] = out.get(t, 0.0) + weight * v
    return normalise(out)


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine of two normalised vectors (iterates over the smaller one)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())
