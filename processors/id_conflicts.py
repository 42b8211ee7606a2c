"""One title under two arXiv ids, or one id under two unrelated titles: real titles only, bounded work.

The titles compared are those the window's notes state, the living document's (its table rows and the text
of its links to arXiv) and the earlier briefings' listed ids.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from processors.arxiv_ids import strip_version
from processors.discrepancy_keys import Finding, id_titles_key, ids_key
from processors.i18n import Lang, say
from processors.id_titles import plausible_title
from processors.models import Claim, TitledId
from processors.tokens import terms

# (id, title) pairs one document contributes: a 50,000-row table is not read whole.
MAX_TITLED_PER_SOURCE = 1000
MAX_IDS_PER_TITLE = 3  # a "title" under more ids is a label (a venue, a category), not one paper's title
MAX_TITLES_PER_ID = 8
MAX_POSTINGS = 64  # ids a title token may index; a token in more titles says nothing about any pair
MAX_FINDINGS = 40
_SIMILAR = 0.75  # Jaccard of title terms: the same title, typos and punctuation aside
_UNRELATED = 0.2
_ARXIV_LINK = re.compile(
    r"\[(?P<text>[^\]\n]{6,300})\]\((?P<url>https?://(?:www\.)?arxiv\.org/(?:abs|pdf|html)/[^)\s]{4,40})\)",
    re.IGNORECASE,
)
# Words any two papers of the field may share in their titles; sharing another word links two titles.
_COMMON_TEXT = """llm llms large language model models efficient efficiency inference serving cache kv key value
attention generation generative learning neural network networks via towards using based fast long context
memory training transformer transformers data benchmark survey approach method methods framework system
systems reduction compression decoding token tokens"""
_COMMON_TERMS = frozenset(_COMMON_TEXT.split())
_LEAD_NAME = re.compile(r"^\s*([^:：]{2,40})[:：]")


class BoundedTitles:
    """The pairs id conflicts are looked for among: plausible titles only, at most MAX_TITLED_PER_SOURCE per
    document, each (id, title) once, as first stated (the same pair stated by many notes is one statement).

    A document's pairs are added together, in any order of documents: each comes with its place in the window.
    """

    def __init__(self) -> None:
        self._first: dict[tuple[str, str], tuple[tuple[int, int], TitledId]] = {}

    def add(self, titled: Iterable[TitledId], position: int = 0) -> None:
        titled = list(titled)
        for n, (p, kept) in enumerate(zip(titled, within_bound(titled), strict=True)):
            if kept:
                self.offer(p, position, n)

    def offer(self, p: TitledId, position: int, n: int) -> None:
        """One pair within its document's bound: the `n`th its document states, at `position` in the window."""
        mark = title_mark(p)
        held = self._first.get(mark)
        if held is None or (position, n) < held[0]:
            self._first[mark] = ((position, n), p)

    @property
    def pairs(self) -> list[tuple[TitledId, frozenset[str]]]:
        """The pairs in the order first stated, each with its title's terms."""
        firsts = sorted(self._first.values(), key=lambda e: e[0])
        return [(p, key) for _, p in firsts if (key := title_terms(p.title)) is not None]


def title_mark(p: TitledId) -> tuple[str, str]:
    """What makes two statements one: the id without its version, the title casefolded."""
    return strip_version(p.id), p.title.casefold()


def within_bound(titled: Iterable[TitledId]) -> list[bool]:
    """For each pair of one document's, whether it is among the first MAX_TITLED_PER_SOURCE of its path."""
    per_source: Counter[str] = Counter()
    out = []
    for p in titled:
        path = p.source.split("#", 1)[0]
        out.append(per_source[path] < MAX_TITLED_PER_SOURCE)
        per_source[path] += 1 if out[-1] else 0
    return out


def _bounded(titled: Iterable[TitledId]) -> list[tuple[TitledId, frozenset[str]]]:
    bounded = BoundedTitles()
    bounded.add(titled)
    return bounded.pairs


@lru_cache(maxsize=1 << 16)
def title_terms(title: str) -> frozenset[str] | None:
    """The terms of a plausible title of two terms or more, None for anything else (titles recur across notes)."""
    if not plausible_title(title):
        return None
    key = frozenset(terms(title))
    return key if len(key) >= 2 else None


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _similar_pairs(keys: Sequence[frozenset[str]]) -> Iterator[tuple[int, int]]:
    """Index pairs whose token sets have Jaccard ≥ _SIMILAR, via prefix filtering (rare tokens first).

    Two sets that similar share one of the first |A| - ceil(t·|A|) + 1 of A's tokens in a global order, so
    only those are indexed and probed; a token's postings stop at MAX_POSTINGS, which bounds the work.
    """
    freq = Counter(t for k in keys for t in k)
    postings: dict[str, list[int]] = defaultdict(list)
    for n, key in enumerate(keys):
        ordered = sorted(key, key=lambda t: (freq[t], t))
        prefix = ordered[: len(ordered) - math.ceil(_SIMILAR * len(ordered)) + 1]
        seen: set[int] = set()
        for token in prefix:
            bucket = postings[token]
            for m in bucket:
                if m not in seen and _jaccard(keys[m], key) >= _SIMILAR:
                    seen.add(m)
                    yield m, n
            if len(bucket) < MAX_POSTINGS:
                bucket.append(n)


def _claim(p: TitledId, lang: Lang) -> Claim:
    return Claim(text=say("d.id.claim", lang, title=p.title, id=p.id), source=p.source)


def same_title_two_ids(pairs: Sequence[tuple[TitledId, frozenset[str]]], lang: Lang) -> list[Finding]:
    """A title stated under two ids: one of them is most likely a typo."""
    ids_of_title: dict[frozenset[str], set[str]] = defaultdict(set)
    for p, terms_ in pairs:
        ids_of_title[terms_].add(strip_version(p.id))
    usable = [(p, k) for p, k in pairs if len(ids_of_title[k]) <= MAX_IDS_PER_TITLE]
    out: dict[str, Finding] = {}
    for m, n in _similar_pairs([k for _, k in usable]):
        a, b = usable[m][0], usable[n][0]
        if strip_version(a.id) == strip_version(b.id):
            continue
        key = ids_key([a.id, b.id])
        if key not in out:
            subject = say("d.id.subject_title", lang, title=_short(a.title, 50), ids=f"{a.id} / {b.id}")
            out[key] = Finding(
                "arxiv_id_conflict",
                key,
                subject,
                (_claim(a, lang), _claim(b, lang)),
                say("d.id.suggest", lang),
            )
            if len(out) >= MAX_FINDINGS:
                break
    return list(out.values())


def _unrelated(a: str, key_a: frozenset[str], b: str, key_b: frozenset[str]) -> bool:
    """Two titles that cannot name one paper: few shared words and none of them distinctive (a writer's
    `vLLM: PagedAttention 显存管理` names the PagedAttention paper), the same script (a translation is no
    conflict), and different lead names (`H2O: …` and `H2O evicts …` are one paper)."""
    shared = key_a & key_b
    if _jaccard(key_a, key_b) >= _UNRELATED or shared - _COMMON_TERMS or _latin(a) != _latin(b):
        return False
    lead_a, lead_b = _LEAD_NAME.match(a), _LEAD_NAME.match(b)
    return not (lead_a and lead_b and lead_a.group(1).casefold() == lead_b.group(1).casefold())


def _latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) * 2 >= len(letters)


def one_id_two_titles(pairs: Sequence[tuple[TitledId, frozenset[str]]], lang: Lang) -> list[Finding]:
    """An id given two unrelated real titles (card, table row, link): one of the two is the wrong id."""
    by_id: dict[str, list[tuple[TitledId, frozenset[str]]]] = defaultdict(list)
    for p, key in pairs:
        group = by_id[strip_version(p.id)]
        if p.strong and len(key) >= 3 and len(group) < MAX_TITLES_PER_ID:
            group.append((p, key))
    out: list[Finding] = []
    for arxiv_id, group in by_id.items():
        pair = next(
            (
                (a, b)
                for i, (a, ka) in enumerate(group)
                for b, kb in group[i + 1 :]
                if _unrelated(a.title, ka, b.title, kb)
            ),
            None,
        )
        if pair is not None:
            subject = say("d.id.subject_id", lang, id=arxiv_id)
            claims = (_claim(pair[0], lang), _claim(pair[1], lang))
            out.append(
                Finding(
                    "arxiv_id_conflict", id_titles_key(arxiv_id), subject, claims, say("d.id.suggest", lang)
                )
            )
            if len(out) >= MAX_FINDINGS:
                break
    return out


def id_conflicts(titled: Iterable[TitledId], lang: Lang) -> list[Finding]:
    """Same title under two ids, and one id under two unrelated titles, among plausible titles only."""
    return conflicts_among(_bounded(titled), lang)


def conflicts_among(pairs: Sequence[tuple[TitledId, frozenset[str]]], lang: Lang) -> list[Finding]:
    """`id_conflicts` of pairs gathered already (`BoundedTitles`)."""
    return [*same_title_two_ids(pairs, lang), *one_id_two_titles(pairs, lang)]


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
