"""How far a claim can be trusted (★ to ★★★★★), from the kind of source; the rules are configurable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal
from urllib.parse import urlsplit

from processors.arxiv_ids import yymm
from processors.briefing_rules import CredibilityRules
from processors.i18n import Lang, say
from processors.models import Frozen

SourceKind = Literal["arxiv", "vendor", "community", "unknown"]


class Credibility(Frozen):
    stars: int
    kind: SourceKind
    text: str


def _domain_in(url: str, domains: Sequence[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return any(host == d or host.endswith("." + d) for d in domains)


def source_kind(
    ids: Sequence[str], urls: Sequence[str], titles: Sequence[str], rules: CredibilityRules
) -> SourceKind:
    """arXiv when an id is cited; else vendor or community by URL domain or title words; else unknown."""
    if ids:
        return "arxiv"
    if any(_domain_in(u, rules.vendor_domains) for u in urls):
        return "vendor"
    lowered = " ".join(titles).lower()
    if any(_domain_in(u, rules.community_domains) for u in urls) or any(
        w in lowered for w in rules.community_words
    ):
        return "community"
    return "unknown"


def assess(
    *,
    ids: Sequence[str],
    urls: Sequence[str],
    titles: Sequence[str],
    supporting_docs: int,
    flagged: bool,
    verified: bool | None,
    rules: CredibilityRules,
    lang: Lang,
) -> Credibility:
    """Stars from the kind of source, +1 when independent notes agree; a flagged claim is noted, and the
    D-items carry it, rather than marking the whole increment down."""
    kind = source_kind(ids, urls, titles, rules)
    stars = getattr(rules, kind)
    notes: list[str] = []
    if kind == "arxiv":
        ym = yymm(ids[0])
        notes.append(say("cred.arxiv", lang, month=f"{ym[0]}-{ym[1]:02d}" if ym else ids[0]))
        if verified is not None:
            notes.append(say("cred.api" if verified else "cred.unverified", lang))
    else:
        notes.append(say(f"cred.{kind}", lang))
    if supporting_docs >= 2:
        stars += 1
        notes.append(say("cred.support", lang, n=supporting_docs))
    if flagged:
        notes.append(say("cred.flagged", lang))
    stars = max(1, min(5, stars))
    sep = "；" if lang == "zh" else "; "
    return Credibility(stars=stars, kind=kind, text=f"{'★' * stars} — {sep.join(notes)}")
