"""The reference of a note's MinHash signature: rensa's RMinHash over its shingles, computed in Python.

The product computes the same digest in the compiled pass (`processors.structure.read_note(body).signature`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import rensa

from processors.near_duplicates import MIN_SHINGLES, NUM_PERM, SEED, Signature
from processors.tokens import normalise, token_counts


def shingles(text: str) -> set[str]:
    """CJK runs as character bigrams, other letter/digit runs as words, of the normalised text."""
    # Equal to the shingles of reference.text.normalise_text(text) (a test checks it): its markdown-noise and
    # whitespace passes only touch characters that never belong to a token, and cost half the time of a note.
    return _tokens(normalise(text))


def _tokens(norm: str) -> set[str]:
    """The shingles of a text already NFKC-normalised and lower-cased."""
    return set(token_counts(norm))


def signature_of(tokens: Collection[str]) -> Signature:
    """The MinHash digest of a set of shingles; () when there are fewer than MIN_SHINGLES."""
    if len(tokens) < MIN_SHINGLES:
        return ()
    sketch = rensa.RMinHash(NUM_PERM, SEED)
    sketch.update(list(tokens))
    return tuple(sketch.digest())


def signature(text: str) -> Signature:
    """The MinHash digest of the text's shingles; () when it has fewer than MIN_SHINGLES."""
    return signature_of(shingles(text))


def signatures(texts: Iterable[str]) -> list[Signature]:
    """`signature` of many texts."""
    # rensa's batch API (RMinHash.digests_from_token_sets) measured slower here: shingling in Python is
    # over 90 % of the time, and the batch call only adds list copies (bench/near_dup_speed.py).
    return [signature(t) for t in texts]
