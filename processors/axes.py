"""Which configured axes a document goes to: every axis weighs every note; a living document is its axis's own."""

from __future__ import annotations

from collections.abc import Sequence

from processors.models import AxisSpec, DocumentSummary


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def assign_axes(doc: DocumentSummary, axes: Sequence[AxisSpec]) -> list[str]:
    """Names of the axes whose windows hold the document, in configuration order.

    Keywords do not gate: a note, card, work queue or earlier briefing goes to every axis, which weighs it
    (processors.relevance) and accounts for it in its briefing even when it yields nothing there. A living
    document goes to the axis that names it (`living_doc`), else to the axis its file is named after.
    """
    if doc.kind == "living":
        own = [a.name for a in axes if a.living_doc == doc.path]
        return own or [a.name for a in axes if a.name == _stem(doc.path)][:1]
    return [a.name for a in axes]
