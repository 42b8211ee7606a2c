"""Measure near-duplicate detection on the real corpus; prints the figures of README "Near-duplicates".

.venv/bin/python bench/near_dup_eval.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from unittest import mock
from zoneinfo import ZoneInfo

import rensa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import near_dup_speed  # noqa: E402
from processors import near_duplicates as nd  # noqa: E402
from processors.documents import parse_document  # noqa: E402
from processors.models import Document, RawFile  # noqa: E402
from processors.tokens import CJK  # noqa: E402
from tests.processors.reference import near_duplicates as ref  # noqa: E402
from tests.processors.reference.text import normalise_text  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
ZH = CORPUS / "daily_digests" / "zh_hf_2404589803"
DBLP = CORPUS / "near_dup" / "ditto_er_magellan_DBLP-ACM" / "Structured"
ARXIV = CORPUS / "arxiv_metadata" / "zl-asica_llm_inference_subset.jsonl"
SH = ZoneInfo("Asia/Shanghai")
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
_REVISION = re.compile(r"^(\d{4}-\d{2}-\d{2})_daily_paper(?:@(\d{8}T\d{6})_[0-9a-f]+)?\.md$")


@dataclass(frozen=True)
class ZhDoc:
    name: str  # final/<file> or revisions/<file>
    day: str  # the ground truth: one document per day
    when: datetime  # revision commit time; a final comes after every revision of its day
    doc: Document


def parse(path: str, data: bytes) -> Document:
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


def load_zh() -> list[ZhDoc]:
    """Every final and revision, parsed by the product's own parser as one inbox note per day."""
    out = []
    for p in sorted(ZH.glob("*/*.md")):
        m = _REVISION.match(p.name)
        assert m, p
        day, stamp = m.group(1), m.group(2)
        when = (
            datetime.strptime(stamp, "%Y%m%dT%H%M%S").replace(tzinfo=SH)
            if stamp
            else datetime.fromisoformat(day).replace(tzinfo=SH) + timedelta(days=3)
        )
        doc = parse(f"inbox/hf/{day}-daily-paper.md", p.read_bytes())
        out.append(ZhDoc(f"{p.parent.name}/{p.name}", day, when, doc))
    return out


def load_pairs(split: str) -> list[tuple[str, str, bool]]:
    rows = []
    for line in (DBLP / f"{split}.txt").read_text(encoding="utf-8").splitlines():
        left, right, label = line.split("\t")
        rows.append((left, right, label.strip() == "1"))
    return rows


@dataclass(frozen=True)
class Scores:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def row(self) -> str:
        return f"{self.precision:.3f} | {self.recall:.3f} | {self.f1:.3f} | {self.tp}/{self.fp}/{self.fn}"


def score(decisions: Sequence[tuple[bool, bool]]) -> Scores:
    """(predicted, actual) pairs to TP/FP/FN."""
    tp = sum(1 for p, a in decisions if p and a)
    fp = sum(1 for p, a in decisions if p and not a)
    fn = sum(1 for p, a in decisions if a and not p)
    return Scores(tp, fp, fn)


def zh_pairs(docs: Sequence[ZhDoc]) -> list[tuple[int, int, bool, bool]]:
    """(i, j, same day, same normalised text) for every unordered pair."""
    return [
        (i, j, docs[i].day == docs[j].day, docs[i].doc.text_hash == docs[j].doc.text_hash)
        for i, j in itertools.combinations(range(len(docs)), 2)
    ]


def zh_scores(docs: Sequence[ZhDoc], t: float) -> dict[str, Scores]:
    """Same-day truth against the pairwise decision (`similarity >= t` or equal text hash) and against the
    groups of `find_duplicates`; over all pairs, pairs of non-empty texts, pairs whose text differs."""
    pairs = zh_pairs(docs)
    sigs = [d.doc.signature for d in docs]
    pairwise = [equal or nd.similarity(sigs[i], sigs[j]) >= t for i, j, _, equal in pairs]
    grouped = _group_decisions(docs, sigs, t)
    truth = [same for _, _, same, _ in pairs]
    non_empty = [bool(docs[i].doc.text.strip() and docs[j].doc.text.strip()) for i, j, _, _ in pairs]
    differs = [not equal for *_, equal in pairs]

    def only(decisions: Sequence[bool], mask: Sequence[bool]) -> Scores:
        return score([(d, y) for d, y, m in zip(decisions, truth, mask, strict=True) if m])

    everything = [True] * len(pairs)
    return {
        "pairs": only(pairwise, everything),
        "non_empty": only(pairwise, non_empty),
        "text_differs": only(pairwise, differs),
        "groups": only(grouped, everything),
        "groups_non_empty": only(grouped, non_empty),
    }


def zh_section(docs: list[ZhDoc], quick: bool) -> None:
    pairs = zh_pairs(docs)
    sigs = [d.doc.signature for d in docs]
    sims = {(i, j): nd.similarity(sigs[i], sigs[j]) for i, j, _, _ in pairs}
    positives = sum(1 for p in pairs if p[2])
    empty = [d.name for d in docs if not d.doc.text.strip()]
    print(f"## zh newsletter revisions ({ZH.relative_to(ROOT)})\n")
    print(
        f"{len(docs)} documents, {len({d.day for d in docs})} days, {len(pairs)} pairs, {positives} same-day "
        f"pairs ({sum(1 for p in pairs if p[2] and not p[3])} of them with different normalised text). "
        f"Empty: {', '.join(empty)}.\n"
    )
    print(
        "Pairwise: `similarity(a, b) >= t` or equal text hash, against same-day truth, over all pairs, over"
    )
    print("pairs of non-empty texts, over pairs whose text differs. Groups: `find_duplicates` over all")
    print("documents as one window, two documents predicted together when they share a kept document.\n")
    print(
        "| t | P | R | F1 | tp/fp/fn | R (non-empty) | R (text differs) | P groups | R groups | R groups (non-empty) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in THRESHOLDS:
        sc = zh_scores(docs, t)
        mark = " **default**" if t == 0.8 else ""
        print(
            f"| {t}{mark} | {sc['pairs'].row()} | {sc['non_empty'].recall:.3f} | "
            f"{sc['text_differs'].recall:.3f} | {sc['groups'].precision:.3f} | {sc['groups'].recall:.3f} | "
            f"{sc['groups_non_empty'].recall:.3f} |"
        )
    print("\nSame-day pairs of non-empty texts missed at 0.8 (pairwise):\n")
    for i, j, same, equal in pairs:
        a, b = docs[i], docs[j]
        if same and not equal and sims[i, j] < 0.8 and a.doc.text.strip() and b.doc.text.strip():
            exact = _jaccard(ref.shingles(a.doc.text), ref.shingles(b.doc.text))
            print(
                f"- {a.name} ({a.doc.bytes} B, {len(ref.shingles(a.doc.text))} shingles) vs {b.name} "
                f"({b.doc.bytes} B, {len(ref.shingles(b.doc.text))} shingles): estimated {sims[i, j]:.3f}, "
                f"exact Jaccard {exact:.3f}"
            )
    negatives = [sims[i, j] for i, j, same, _ in pairs if not same]
    positives_sim = [sims[i, j] for i, j, same, eq in pairs if same and not eq and sigs[i] and sigs[j]]
    print(
        f"\nDifferent days: highest estimated similarity {max(negatives):.3f}. Same day, both non-empty, "
        f"text differs: lowest {min(positives_sim):.3f}, median {statistics.median(positives_sim):.3f}.\n"
    )
    _num_perm_sweep(docs, pairs, quick)


def _group_decisions(docs: Sequence[ZhDoc], sigs: Sequence[tuple[int, ...]], t: float) -> list[bool]:
    """For every pair of `zh_pairs`: does find_duplicates put both in one group?"""
    items = [nd.Fingerprint(d.name, d.when, d.doc.text_hash, s) for d, s in zip(docs, sigs, strict=True)]
    dups = nd.find_duplicates(items, t)
    root = {d.name: dups[d.name].kept if d.name in dups else d.name for d in docs}
    return [root[a.name] == root[b.name] for a, b in itertools.combinations(docs, 2)]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _num_perm_sweep(docs: Sequence[ZhDoc], pairs: Sequence[tuple[int, int, bool, bool]], quick: bool) -> None:
    """Recall at 0.8 on same-day pairs of different, non-empty texts, over seeds: the estimator's noise."""
    token_sets = [list(ref.shingles(d.doc.text)) for d in docs]
    seeds = range(5 if quick else 30)
    print("num_perm sweep at t = 0.8 over pairs of different, non-empty texts (mean and worst over seeds);")
    print("pairwise decision, and the groups of find_duplicates. Ceiling (exact Jaccard): 50/52 = 0.962.\n")
    print("| num_perm | bytes/signature (JSON) | pairwise R mean | worst | groups R mean | worst | P (all) |")
    print("|---|---|---|---|---|---|---|")
    wanted = [not equal and bool(token_sets[i] and token_sets[j]) for i, j, _, equal in pairs]
    for num_perm in (32, 64, 128, 256, 512):
        pairwise, grouped, precisions = [], [], []
        width = 0
        for seed in seeds:
            sigs = [
                tuple(d) if t else ()
                for d, t in zip(
                    rensa.RMinHash.digests_from_token_sets(token_sets, num_perm, seed),
                    token_sets,
                    strict=True,
                )
            ]
            width = len(json.dumps(sigs[0]))
            with mock.patch.object(nd, "NUM_PERM", num_perm):
                groups = _group_decisions(docs, sigs, 0.8)
            decided = [nd.similarity(sigs[i], sigs[j]) >= 0.8 for i, j, _, _ in pairs]
            truth = [same for _, _, same, _ in pairs]
            pairwise.append(
                score([(d, y) for d, y, w in zip(decided, truth, wanted, strict=True) if w]).recall
            )
            grouped.append(score([(g, y) for g, y, w in zip(groups, truth, wanted, strict=True) if w]).recall)
            precisions.append(
                min(
                    score(list(zip(decided, truth, strict=True))).precision,
                    score(list(zip(groups, truth, strict=True))).precision,
                )
            )
        print(
            f"| {num_perm} | {width} | {statistics.mean(pairwise):.3f} | {min(pairwise):.3f} | "
            f"{statistics.mean(grouped):.3f} | {min(grouped):.3f} | {min(precisions):.3f} |"
        )
    print()


# ---- shingle schemes (exact Jaccard, so the choice does not depend on MinHash noise) ----------------


def scheme(cjk_n: int, word_n: int) -> Callable[[str], set[str]]:
    cjk_run = re.compile(f"[{CJK}]+")
    word = re.compile(rf"[^\W_{CJK}]+")

    def shingle(text: str) -> set[str]:
        norm = normalise_text(text)
        out: set[str] = set()
        for run in cjk_run.findall(norm):
            out.update(
                {run} if len(run) < cjk_n else (run[i : i + cjk_n] for i in range(len(run) - cjk_n + 1))
            )
        words = word.findall(norm)
        if len(words) < word_n:
            out.update({" ".join(words)} if words else set())
        else:
            out.update(" ".join(words[i : i + word_n]) for i in range(len(words) - word_n + 1))
        return out

    return shingle


def scheme_section(docs: Sequence[ZhDoc], dblp: Sequence[tuple[str, str, bool]]) -> None:
    pairs = [p for p in zh_pairs(docs) if not p[3] and docs[p[0]].doc.text and docs[p[1]].doc.text]
    print("## Shingle schemes (exact Jaccard at 0.8)\n")
    print("zh: same-day pairs with different, non-empty text; DBLP-ACM: validation pairs.\n")
    print("| CJK n-gram | word n-gram | zh recall | zh max other-day | DBLP P | DBLP R | DBLP F1 |")
    print("|---|---|---|---|---|---|---|")
    for cjk_n, word_n in itertools.product((1, 2, 3, 4), (1, 2, 3)):
        fn = scheme(cjk_n, word_n)
        sets = [fn(d.doc.text) for d in docs]
        zh = score([(_jaccard(sets[i], sets[j]) >= 0.8, same) for i, j, same, _ in pairs])
        other = max(_jaccard(sets[i], sets[j]) for i, j, same, _ in pairs if not same)
        db = score([(_jaccard(fn(a), fn(b)) >= 0.8, y) for a, b, y in dblp])
        mark = " (chosen)" if (cjk_n, word_n) == (nd.CJK_NGRAM, 1) else ""
        print(
            f"| {cjk_n}{mark} | {word_n} | {zh.recall:.3f} | {other:.3f} | {db.precision:.3f} | "
            f"{db.recall:.3f} | {db.f1:.3f} |"
        )
    print()


# ---- DBLP-ACM ------------------------------------------------------------------------------------------


def dblp_section(valid: Sequence[tuple[str, str, bool]], test: Sequence[tuple[str, str, bool]]) -> None:
    def sims(rows: Sequence[tuple[str, str, bool]]) -> list[tuple[float, bool]]:
        left = ref.signatures([r[0] for r in rows])
        right = ref.signatures([r[1] for r in rows])
        return [(nd.similarity(a, b), r[2]) for a, b, r in zip(left, right, rows, strict=True)]

    sv, st = sims(valid), sims(test)
    grid = [round(0.3 + 0.05 * k, 2) for k in range(14)]
    best = max(grid, key=lambda t: (score([(s >= t, y) for s, y in sv]).f1, t))
    print(f"## DBLP-ACM record pairs ({DBLP.relative_to(ROOT)})\n")
    print(
        f"valid: {len(valid)} pairs ({sum(y for *_, y in valid)} matches), test: {len(test)} pairs "
        f"({sum(y for *_, y in test)} matches). Threshold chosen on valid, reported on test.\n"
    )
    print("| split | t | P | R | F1 | tp/fp/fn |")
    print("|---|---|---|---|---|---|")
    for name, rows in (("valid", sv), ("test", st)):
        for t in sorted({0.6, 0.7, 0.8, best}):
            label = f"{t}" + (" (default)" if t == 0.8 else "") + (" (best F1 on valid)" if t == best else "")
            print(f"| {name} | {label} | {score([(s >= t, y) for s, y in rows]).row()} |")
    hard = [(a, b) for a, b, y in [*valid, *test] if not y and re.search(r"\bpart ii?\b", a + b)]
    hard_sims = sorted(nd.similarity(ref.signature(a), ref.signature(b)) for a, b in hard)
    print(
        f"\nHard negatives naming 'part i'/'part ii' (valid + test): {len(hard)}, estimated similarity "
        f"{', '.join(f'{x:.2f}' for x in hard_sims)}; flagged at 0.8: {sum(x >= 0.8 for x in hard_sims)}."
    )
    false = sorted(((s, i) for i, (s, y) in enumerate(st) if s >= 0.8 and not y), reverse=True)[:3]
    for sim, i in false:
        print(f"- test false positive at {sim:.2f}: {test[i][0][:90]} || {test[i][1][:90]}")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer seeds and rounds, smaller LSH window")
    args = ap.parse_args()
    docs = load_zh()
    valid, test = load_pairs("valid"), load_pairs("test")
    print(
        f"# Near-duplicates: shingles = CJK character {nd.CJK_NGRAM}-grams + words, num_perm = {nd.NUM_PERM}, "
        f"min shingles = {nd.MIN_SHINGLES}, rensa algorithm v{rensa.RMinHash.ALGORITHM_VERSION}\n"
    )
    zh_section(docs, args.quick)
    scheme_section(docs, valid)
    dblp_section(valid, test)
    en = [f"# {r['title']}\n\n{r['summary']}" for r in map(json.loads, ARXIV.read_text("utf-8").splitlines())]
    near_dup_speed.throughput_section([d.doc.text for d in docs if d.doc.text], en, args.quick)
    near_dup_speed.lsh_scale_section(args.quick)


if __name__ == "__main__":
    main()
