"""Speed of near-duplicate detection: signatures per second, and find_duplicates on a 100k window.

Run through bench/near_dup_eval.py, which passes it the corpus texts.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from unittest import mock
from zoneinfo import ZoneInfo

import rensa

from processors import documents
from processors import near_duplicates as nd
from processors.models import RawFile
from tests.processors.reference import near_duplicates as ref
from tests.processors.reference import reading

SH = ZoneInfo("Asia/Shanghai")


def parse(data: bytes) -> None:
    raw = RawFile(
        path="inbox/jay/2026-09-27-1000-n.md",
        content=data,
        size=len(data),
        mtime=0.0,
        sha256=hashlib.sha256(data).hexdigest(),
    )
    documents.parse_document(raw, zone=SH)


def _rate(fn: Callable[[], object], count: int, repeats: int) -> float:
    """Items per second, best of `repeats` runs: the box may be busy with other work."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return count / best


def _throughput_row(name: str, texts: Sequence[str], repeats: int) -> str:
    raws = [t.encode() for t in texts]

    def parse_all() -> None:
        for data in raws:
            parse(data)

    def rensa_batch() -> None:
        # The alternative to nd.signatures: shingle everything, then one call into rensa's batch API.
        token_sets = [list(ref.shingles(t)) for t in texts]
        rensa.RMinHash.digests_from_token_sets(token_sets, nd.NUM_PERM, nd.SEED)

    single = _rate(lambda: ref.signatures(texts), len(texts), repeats)
    many = _rate(rensa_batch, len(texts), repeats)
    sketch_only = [list(ref.shingles(t)) for t in texts]
    rust = _rate(
        lambda: rensa.RMinHash.digests_from_token_sets(sketch_only, nd.NUM_PERM, nd.SEED), len(texts), repeats
    )
    parsed = _rate(parse_all, len(raws), repeats)
    # The parse as it was before the compiled pass (issue 14): every field computed in Python.
    with mock.patch.object(documents, "read_note", reading.read_note):
        python = _rate(parse_all, len(raws), repeats)
    chars = statistics.mean(len(t) for t in texts)
    return f"| {name} | {chars:.0f} | {single:.0f} | {many:.0f} | {rust:.0f} | {parsed:.0f} | {python:.0f} |"


def throughput_section(zh: Sequence[str], en: Sequence[str], quick: bool) -> None:
    """Python reference signatures/s, and parse_document/s with the compiled and the Python pass, on zh and en."""
    repeats = 2 if quick else 5
    print("## Throughput (one core, best of runs)\n")
    print(
        "| texts | mean chars | signatures() /s | shingles + rensa batch API /s | rensa batch API alone /s "
        "| parse_document /s | parse_document, Python reference pass /s |"
    )
    print("|---|---|---|---|---|---|---|")
    print(_throughput_row("zh newsletters", list(zh) * 4, repeats))
    print(_throughput_row("arXiv title + abstract (en)", en, repeats))
    print()


def lsh_scale_section(quick: bool) -> None:
    """find_duplicates on a large window: random signatures plus planted near copies."""
    n, planted = (20_000, 200) if quick else (100_000, 1_000)
    rng = random.Random(7)
    start = datetime(2026, 9, 27, tzinfo=SH)
    items = [
        nd.Fingerprint(
            f"d{i}",
            start + timedelta(seconds=i),
            f"h{i}",
            tuple(rng.getrandbits(32) for _ in range(nd.NUM_PERM)),
        )
        for i in range(n)
    ]
    sources = []
    for k in range(planted):
        source = items[rng.randrange(n)]
        sources.append(source)
        copy = tuple(v if rng.random() < 0.85 else rng.getrandbits(32) for v in source.signature)
        items.append(nd.Fingerprint(f"p{k}", start + timedelta(seconds=n + k), f"ph{k}", copy))
    calls = [0]
    real = nd.similarity

    def counting(a: Sequence[int], b: Sequence[int]) -> float:
        calls[0] += 1
        return real(a, b)

    nd.similarity = counting
    try:
        t0 = time.perf_counter()
        dups = nd.find_duplicates(items, 0.8)
        elapsed = time.perf_counter() - t0
    finally:
        nd.similarity = real
    found = sum(1 for k in range(planted) if f"p{k}" in dups)
    by_key = {f.key: f for f in items}
    # A planted copy is findable when its estimated similarity to some earlier signature reaches 0.8.
    findable = sum(1 for k in range(planted) if real(by_key[f"p{k}"].signature, sources[k].signature) >= 0.8)
    bands, rows = nd.lsh_bands(0.8)
    print("## LSH at window scale\n")
    print(
        f"{n} unrelated signatures + {planted} planted copies (~0.85 of the slots kept): "
        f"find_duplicates at 0.8 took {elapsed:.2f} s, {calls[0]} similarity checks "
        f"({calls[0] / (len(items) ** 2 / 2):.2e} of all pairs), found {found} of the {findable} planted copies "
        f"estimated >= 0.8 ({planted} planted), "
        f"{len(dups) - found} false. LSH: {bands} bands x {rows} rows.\n"
    )
