"""Near-duplicate detection over MinHash signatures: banded LSH, then the estimated Jaccard.

A note's signature is computed in the compiled pass over it (`processors.structure.read_note`): rensa's
R-MinHash over its shingles — CJK character bigrams and other letter/digit runs as words, of the NFKC,
lower-cased text — equal to rensa's own digest (tests/processors/reference/near_duplicates.py).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
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
    check_threshold(threshold)
    ordered = sorted(items, key=lambda f: (f.event_time, f.key))
    first_by_hash: dict[str, Fingerprint] = {}
    exact: dict[str, str] = {}
    for f in ordered:
        kept = first_by_hash.setdefault(f.text_hash, f)
        if kept is not f:
            exact[f.key] = kept.key
    # Exact copies say nothing more: only the first of each text is compared, and only whole signatures.
    firsts = [f for f in first_by_hash.values() if len(f.signature) == NUM_PERM]  # in event-time order
    sigs = {f.key: f.signature for f in firsts}
    candidates = {
        key: {m: similarity(sigs[key], sigs[m]) for m in members}
        for key, members in bucket_firsts([(f.key, f.signature) for f in firsts], threshold).items()
    }
    near = group_near([f.key for f in firsts], candidates, threshold)
    kept_sims = {
        (f, n.kept): similarity(sigs[f], sigs[n.kept]) for f, n in near.items() if n.similarity is None
    }
    return merge_groups(exact, near, kept_sims)


def check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")


def band_keys(signature: Sequence[int], threshold: float) -> list[int]:
    """The LSH bucket of each band of a whole signature at `threshold`'s banding."""
    bands, rows = lsh_bands(threshold, NUM_PERM)
    return [hash(tuple(signature[b * rows : (b + 1) * rows])) for b in range(bands)]


def bucket_firsts(signatures: Iterable[tuple[str, Signature]], threshold: float) -> dict[str, list[str]]:
    """key → the earlier documents it must be compared with: per band, the first one in its bucket (`signatures`
    whole, in event-time order); a document sharing no bucket with an earlier one is left out."""
    # Only the first of each bucket: memory stays at one entry per band and document, and a tight cluster of
    # near-identical documents costs one check per band instead of one per member.
    bands, _ = lsh_bands(threshold, NUM_PERM)
    buckets: list[dict[int, str]] = [{} for _ in range(bands)]
    out: dict[str, list[str]] = {}
    for key, signature in signatures:
        keys = band_keys(signature, threshold)
        members = list(dict.fromkeys(m for m in map(dict.get, buckets, keys) if m is not None))
        if members:
            out[key] = members
        for bucket, band_key in zip(buckets, keys, strict=True):
            bucket.setdefault(band_key, key)
    return out


@dataclass(frozen=True)
class NearMatch:
    """A near duplicate found: its group's kept document, the one it matched, and the similarity to the kept one
    (None when that one is not the match: to be measured, `merge_groups` is told)."""

    kept: str
    matched: str
    similarity: float | None


def group_near(
    order: Sequence[str], candidates: Mapping[str, Mapping[str, float]], threshold: float
) -> dict[str, NearMatch]:
    """Near duplicates from the candidates of each document (earlier ones, with their similarity), taken in
    `order` (event time): a document joins the group of its most similar candidate at or above the threshold,
    the earliest of equals; groups never merge."""
    rank = {key: i for i, key in enumerate(order)}
    kept_of: dict[str, str] = {}
    near: dict[str, NearMatch] = {}
    for key in sorted(candidates, key=rank.__getitem__):
        best: tuple[float, int, str] | None = None
        for m, sim in candidates[key].items():
            if sim >= threshold and (best is None or (sim, -rank[m]) > (best[0], -best[1])):
                best = (sim, rank[m], m)
        if best is None:
            continue
        kept = kept_of.get(best[2], best[2])
        kept_of[key] = kept
        near[key] = NearMatch(kept=kept, matched=best[2], similarity=best[0] if best[2] == kept else None)
    return near


def merge_groups(
    exact: Mapping[str, str], near: Mapping[str, NearMatch], kept_sims: Mapping[tuple[str, str], float]
) -> dict[str, DuplicateOf]:
    """Every duplicate: exact copies (key → the first of its text) and near ones; an exact copy of a near
    duplicate belongs to the near one's group. `kept_sims` holds the similarities `group_near` left open."""
    result = {key: DuplicateOf(kept=k, kind="exact", similarity=1.0, matched=k) for key, k in exact.items()}
    found: dict[str, DuplicateOf] = {}
    for key, n in near.items():
        sim = n.similarity if n.similarity is not None else kept_sims[(key, n.kept)]
        found[key] = DuplicateOf(kept=n.kept, kind="near", similarity=sim, matched=n.matched)
    result.update(found)
    for key, dup in list(result.items()):
        if dup.kind == "exact" and dup.kept in found:  # an exact copy of a near duplicate
            via = found[dup.kept]
            result[key] = DuplicateOf(kept=via.kept, kind="near", similarity=via.similarity, matched=dup.kept)
    return result
