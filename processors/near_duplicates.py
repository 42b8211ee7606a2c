"""Near-duplicate detection over MinHash signatures: banded LSH, then the estimated Jaccard.

A note's signature is computed in the compiled pass over it (`processors.structure.read_note`): rensa's
R-MinHash over its shingles — CJK character bigrams and other letter/digit runs as words, of the NFKC,
lower-cased text — equal to rensa's own digest (tests/processors/reference/near_duplicates.py).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

# Measured on tests/corpus (bench/near_dup_eval.py, README "Near-duplicates"): CJK character bigrams and
# Latin word unigrams keep every re-translated revision pair above 0.8 while different days stay below 0.22.
NUM_PERM = 128
SEED = 20260927  # part of the signature: changing it (or NUM_PERM, or the token hash) needs a re-parse
CJK_NGRAM = 2
# Below this many distinct shingles a text says too little: "见上" and "见上。" must not pair up as near.
MIN_SHINGLES = 10
# LSH bands are chosen so that a pair exactly at the threshold becomes a candidate with this probability.
_LSH_RECALL_AT_THRESHOLD = 0.99


DuplicateKind = Literal["exact", "near"]
Signature = tuple[int, ...]


@dataclass(frozen=True)
class Fingerprint:
    """What duplicate detection needs of a document."""

    key: str
    event_time: datetime
    text_hash: str
    signature: Signature = ()


@dataclass(frozen=True)
class DuplicateOf:
    """A duplicate points at the kept (earliest) document of its group."""

    kept: str
    kind: DuplicateKind  # "exact": same normalised text as the kept document
    similarity: float  # estimated Jaccard with the kept document; 1.0 for exact
    matched: str  # the document it was found (nearly) equal to: the kept one or another of its duplicates


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """Estimated Jaccard of two signatures; 0.0 when either is empty or they are not comparable."""
    if not a or len(a) != len(b):
        return 0.0
    same: int = sum(map(operator.eq, a, b))
    return same / len(a)


@lru_cache(maxsize=32)
def lsh_bands(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(bands, rows): the most selective banding that still finds a pair at the threshold 99 % of the time."""
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= _LSH_RECALL_AT_THRESHOLD:
            best = (bands, rows)
    return best


def find_duplicates(items: Iterable[Fingerprint], threshold: float = 0.8) -> dict[str, DuplicateOf]:
    """Map each duplicate's key to its group's earliest document: exact (same text hash), then near (LSH).

    A document joins the group of the earlier document it is most similar to (>= threshold); groups never merge.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    ordered = sorted(items, key=lambda f: (f.event_time, f.key))
    rank = {f.key: i for i, f in enumerate(ordered)}
    result: dict[str, DuplicateOf] = {}
    first_by_hash: dict[str, Fingerprint] = {}
    for f in ordered:
        kept = first_by_hash.setdefault(f.text_hash, f)
        if kept is not f:
            result[f.key] = DuplicateOf(kept=kept.key, kind="exact", similarity=1.0, matched=kept.key)

    bands, rows = lsh_bands(threshold, NUM_PERM)
    # One dict per band: hash of the band's values -> the first document that had them. Keeping only the
    # first keeps memory at one entry per band and document, and a tight cluster of near-identical
    # documents costs one check per band instead of one per member.
    buckets: list[dict[int, Fingerprint]] = [{} for _ in range(bands)]
    kept_of: dict[str, Fingerprint] = {}
    near: dict[str, DuplicateOf] = {}
    for f in first_by_hash.values():  # insertion order is event-time order
        if len(f.signature) != NUM_PERM:
            continue  # tiny text, or a signature of another scheme: exact dedup only
        band_keys = [hash(f.signature[b * rows : (b + 1) * rows]) for b in range(bands)]
        members = {m.key: m for m in map(dict.get, buckets, band_keys) if m is not None}
        best: tuple[float, int, Fingerprint] | None = None
        for m in members.values():
            sim = similarity(f.signature, m.signature)
            if sim >= threshold and (best is None or (sim, -rank[m.key]) > (best[0], -best[1])):
                best = (sim, rank[m.key], m)
        kept = f if best is None else kept_of[best[2].key]
        kept_of[f.key] = kept
        if best is not None:
            sim_kept = best[0] if best[2] is kept else similarity(f.signature, kept.signature)
            near[f.key] = DuplicateOf(kept=kept.key, kind="near", similarity=sim_kept, matched=best[2].key)
        for bucket, band_key in zip(buckets, band_keys, strict=True):
            bucket.setdefault(band_key, f)

    result.update(near)
    for key, dup in list(result.items()):
        if dup.kind == "exact" and dup.kept in near:  # an exact copy of a near duplicate
            via = near[dup.kept]
            result[key] = DuplicateOf(kept=via.kept, kind="near", similarity=via.similarity, matched=dup.kept)
    return result
