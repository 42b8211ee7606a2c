"""七: what to update first tonight — 🔴 for the few that deserve it, 🟡 the rest, 🟢 low ones and D-item notes
(levels from processors.triage)."""

from __future__ import annotations

from collections.abc import Sequence

from processors.discrepancy_keys import ordered_span
from processors.i18n import Lang, say
from processors.models import Discrepancy, Increment, Priority, UnplacedReason
from processors.placement import write_action
from processors.triage import levels


def _write(sections: Sequence[str], lang: Lang, unplaced: UnplacedReason | None = None) -> str:
    return write_action(sections, unplaced, lang)


def priorities(increments: Sequence[Increment], items: Sequence[Discrepancy], lang: Lang) -> list[Priority]:
    """One row per increment (per suggested section for an id-less one), then one row for the D-items."""
    rows: list[Priority] = []
    for inc, level in zip(increments, levels(increments), strict=True):
        if not inc.arxiv and len([s for s in inc.suggestions if s.via == "text"]) >= 2:
            for s in inc.suggestions:
                rows.append(Priority(level=level, content=s.reason, action=_write([s.section], lang)))
            continue
        figures = say("pri.figures", lang, figures=" / ".join(inc.highlights)) if inc.highlights else ""
        head = f"arXiv {'/'.join(inc.arxiv)}" if inc.arxiv else ""
        rows.append(
            Priority(
                level=level,
                content=" ".join(x for x in (head, inc.named()) if x) + figures,
                action=_write(inc.suggested_sections, lang, inc.unplaced_reason),
            )
        )
    order = {"highest": 0, "medium": 1, "low": 2}
    rows.sort(key=lambda p: order[p.level])
    if items:
        span = ordered_span(d.id for d in items)  # numbers kept from earlier briefings need not be a run
        subjects = " / ".join(d.subject for d in items[:5]) + (" …" if len(items) > 5 else "")
        rows.append(
            Priority(
                level="low",
                content=say("pri.d_content", lang, span=span, subjects=subjects),
                action=say("pri.annotate", lang),
            )
        )
    return rows
