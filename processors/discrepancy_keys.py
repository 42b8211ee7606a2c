"""D numbers that last: one identity key per discrepancy, independent of language and wording.

A key names what the discrepancy is about, never how a briefing phrased it:

- `version:<product>:<a>|<b>`   a product and the sorted pair of its releases (`version:vllm:0.3.3|0.30.0`)
- `ids:<a>|<b>`                 one title under two ids: the sorted pair of ids
- `id-titles:<id>`              one id under two titles
- `future:<id>`                 an id dated after the note that cites it
- `flagged:<path>:<hash>`       a writer's flag: the note and its claim's text (normalised, hashed)
- `unsourced:<path#section>`    figures without a source: the section they stand in

A briefing records each D-item's key; the same key in a later briefing takes the same number.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from processors.arxiv_ids import extract_arxiv_ids, strip_version
from processors.models import Claim, Discrepancy, DiscrepancyKind
from processors.product_versions import release_numbers, versions_in

KIND_ORDER: tuple[DiscrepancyKind, ...] = (
    "version_conflict",
    "arxiv_id_conflict",
    "future_arxiv_id",
    "flagged",
    "unsourced_claim",
)
_D_LINE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:[-*+]\s+)?(?:\*\*)?D(\d{1,6})(?:\*\*)?\s*[：:]\s*(?P<subject>.+)$"
)
_FUTURE_WORDS = ("晚于", "dated after", "later than", "이후", "미래")
_TWO_TITLES = ("两个标题", "two titles", "두 제목", "두 개의 제목")
MAX_BASELINE_ITEMS = 500  # D lines read from one baseline note


@dataclass(frozen=True)
class Finding:
    """A discrepancy before it is numbered: its identity key, display text and evidence."""

    kind: DiscrepancyKind
    key: str
    subject: str
    claims: tuple[Claim, ...]
    suggestion: str


def version_key(product: str, a: str, b: str) -> str:
    return f"version:{product}:{'|'.join(sorted({a, b}, key=_release_order))}"


def ids_key(ids: Iterable[str]) -> str:
    return "ids:" + "|".join(sorted({strip_version(i) for i in ids}))


def id_titles_key(arxiv_id: str) -> str:
    return f"id-titles:{strip_version(arxiv_id)}"


def future_key(arxiv_id: str) -> str:
    return f"future:{strip_version(arxiv_id)}"


def flagged_key(path: str, claim: str) -> str:
    """The note's path (not its section: headings get renamed; a name may hold `#`) and the claim's words,
    without case or punctuation."""
    return f"flagged:{path}:{_digest(claim)}"


def unsourced_key(source: str) -> str:
    return f"unsourced:{source}"


def _digest(text: str) -> str:
    words = re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text).casefold())
    return hashlib.sha1(words.encode("utf-8")).hexdigest()[:12]


def _release_order(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def key_from_subject(subject: str, kind: DiscrepancyKind | None = None) -> str | None:
    """The key a D-item's subject names, when it names one reliably (versions, ids); None otherwise.

    Reads our own subjects in either language and other systems' (`D195：vLLM 0.3.3 与 v0.30.0 版本号差异`).
    """
    ids = list(dict.fromkeys(strip_version(i) for i in extract_arxiv_ids(subject)))
    if kind in (None, "arxiv_id_conflict") and len(ids) == 2:
        return ids_key(ids)
    if len(ids) == 1:
        lowered = subject.lower()
        if kind == "future_arxiv_id" or (kind is None and any(w in lowered for w in _FUTURE_WORDS)):
            return future_key(ids[0])
        if kind == "arxiv_id_conflict" or (kind is None and any(w in lowered for w in _TWO_TITLES)):
            return id_titles_key(ids[0])
    if kind in (None, "version_conflict") and not ids:
        mentions = versions_in(subject, limit=2)
        releases = list(dict.fromkeys(release_numbers(subject)))
        if mentions and len(releases) == 2:
            return version_key(mentions[0].key, *releases)
    return None


def key_of(d: Discrepancy) -> str | None:
    """A recorded D-item's key: the one it carries, else derived as the detector would (older briefings)."""
    if d.key:
        return d.key
    if d.kind == "flagged" and d.claims:
        # An older briefing's claim names a section too: its path is taken up to the first `#`, as it was.
        return flagged_key(d.claims[0].source.split("#", 1)[0], d.claims[0].text)
    if d.kind == "unsourced_claim" and d.claims:
        return unsourced_key(d.claims[0].source)
    return key_from_subject(d.subject, d.kind)


def keys_in_text(text: str) -> list[tuple[int, str | None]]:
    """(number, key or None) for each D-item a baseline note written elsewhere lists (`D195：…`)."""
    out: list[tuple[int, str | None]] = []
    for line in text.splitlines():
        m = _D_LINE.match(line)
        if m:
            out.append((int(m.group(1)), key_from_subject(m.group("subject"))))
            if len(out) >= MAX_BASELINE_ITEMS:
                break
    return out


@dataclass(frozen=True)
class DNumbers:
    """Every D number the axis has used, by key, and the highest used at all."""

    by_key: Mapping[str, int]
    last: int

    def number(self, findings: Iterable[Finding]) -> list[Discrepancy]:
        """A known discrepancy keeps its number; new ones continue after `last`, by kind then key."""
        merged: dict[str, Finding] = {}
        for f in findings:
            first = merged.get(f.key)
            merged[f.key] = f if first is None else _merge(first, f)
        taken: set[int] = set()
        numbered: list[tuple[int, Finding]] = []
        fresh: list[Finding] = []
        for f in merged.values():
            n = self.by_key.get(f.key)
            if n is None or n in taken:
                fresh.append(f)
            else:
                taken.add(n)
                numbered.append((n, f))
        fresh.sort(key=lambda f: (KIND_ORDER.index(f.kind), f.key))
        numbered.extend((self.last + k, f) for k, f in enumerate(fresh, start=1))
        numbered.sort(key=lambda nf: nf[0])
        return [
            Discrepancy(
                id=f"D{n}",
                kind=f.kind,
                subject=f.subject,
                claims=list(f.claims),
                suggestion=f.suggestion,
                key=f.key,
            )
            for n, f in numbered
        ]


def _merge(first: Finding, more: Finding, limit: int = 4) -> Finding:
    """The same discrepancy found twice (a repost, two notes): one item, the evidence of both."""
    claims = tuple(dict.fromkeys([*first.claims, *more.claims]))[:limit]
    return Finding(first.kind, first.key, first.subject, claims, first.suggestion)


def registry(
    recorded: Iterable[Discrepancy], baseline_texts: Iterable[str] = (), extra_numbers: Iterable[int] = ()
) -> DNumbers:
    """The numbers of the D-items recorded (oldest first: the first number a key got stands), then those
    baseline notes list whose key can be read from their subject; `last` covers every number seen."""
    by_key: dict[str, int] = {}
    used: set[int] = set(extra_numbers)
    for d in recorded:
        n = _number(d.id)
        key = key_of(d)
        if n is not None:
            used.add(n)
            if key is not None:
                by_key.setdefault(key, n)
    for text in baseline_texts:
        for n, key in keys_in_text(text):
            if key is not None and key not in by_key and n not in used:
                by_key[key] = n
            used.add(n)
    return DNumbers(by_key=by_key, last=max(used, default=0))


def _number(d_id: str) -> int | None:
    return int(d_id[1:]) if d_id[:1] == "D" and d_id[1:].isdigit() else None


def ordered_span(ids: Iterable[str]) -> str:
    """`D195-D197/D201`: the numbers of a briefing's D-items, runs collapsed."""
    numbers = sorted(n for n in (_number(i) for i in ids) if n is not None)
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return "/".join(f"D{r[0]}" if len(r) == 1 else f"D{r[0]}-D{r[-1]}" for r in runs)
