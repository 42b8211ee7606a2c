"""四: every arXiv id of the window with its title, status, credibility, sections and where its metadata came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from processors.anchoring import IdSplit
from processors.arxiv_atom import EnrichedId
from processors.briefing_rules import CredibilityRules
from processors.credibility import assess
from processors.i18n import Lang
from processors.id_titles import WindowTitles
from processors.living_doc import LivingDoc, sections_citing
from processors.models import ArxivEntry, ArxivMetadata, Increment


@dataclass(frozen=True)
class IdListing:
    """What 四 needs besides the ids: titles, increments, the living document, API records, rules."""

    titles: WindowTitles
    increments: Sequence[Increment]
    living: LivingDoc | None
    records: Mapping[str, EnrichedId]
    credibility: CredibilityRules
    lang: Lang


def arxiv_entries(ids: IdSplit, listing: IdListing) -> list[ArxivEntry]:
    """One entry per window id, in order of first appearance."""
    by_id = {i: inc for inc in listing.increments for i in inc.arxiv}
    new = set(ids.new)
    out = []
    for i in ids.window:
        if i in by_id:
            sections = by_id[i].suggested_sections
        else:
            sections = sections_citing(listing.living, i) if listing.living else []
        cred = assess(
            ids=[i],
            urls=[],
            titles=[],
            supporting_docs=1,
            flagged=False,
            verified=listing.titles.verified.get(i),
            rules=listing.credibility,
            lang=listing.lang,
        )
        record = listing.records.get(i)
        out.append(
            ArxivEntry(
                id=i,
                title=listing.titles.best.get(i, i),
                status="new" if i in new else "continued",
                credibility=cred.text,
                sections=sections,
                metadata=record.metadata() if record is not None else ArxivMetadata(source="document"),
            )
        )
    return out
