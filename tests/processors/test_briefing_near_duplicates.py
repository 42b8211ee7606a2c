"""The window's duplicate detection inside assemble_briefing: exact and near, earliest kept."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.briefing_rules import BriefingRules
from processors.documents import parse_document
from processors.models import AxisSpec, Briefing, Document, RawFile
from processors.window import window_bounds
from tests.processors.near_dup_samples import ZH_NOTE, ZH_NOTE_EDITED, ZH_OTHER

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
AXIS = AxisSpec(name="inference", keywords=("vllm", "推理"))


def parsed(path: str, text: str) -> Document:
    data = text.encode()
    raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


def brief(docs: list[Document], threshold: float = 0.8) -> Briefing:
    return assemble_briefing(
        BriefingRequest(
            axis=AXIS,
            trigger="close",
            window=window_bounds(END, timedelta(hours=24)),
            generated_at=END,
            zone=SH,
            documents=docs,
            rules=BriefingRules(near_duplicate_threshold=threshold),
        )
    )


def test_parse_signs_the_body() -> None:
    doc = parsed("inbox/jay/2026-09-27-1000-kv.md", f"---\ntitle: x\n---\n{ZH_NOTE}")
    other = parsed("inbox/tom/2026-09-27-1100-kv.md", ZH_NOTE)
    assert len(doc.signature) == 128 and doc.signature == other.signature  # front matter is not signed
    assert parsed("inbox/jay/2026-09-27-1000-short.md", "见上").signature == ()


def test_near_and_exact_duplicates_are_listed_with_kind_and_similarity() -> None:
    first = parsed("inbox/jay/2026-09-27-1000-kv.md", ZH_NOTE)
    edited = parsed("inbox/tom/2026-09-27-1200-kv-edited.md", ZH_NOTE_EDITED)
    copy = parsed("inbox/spark/2026-09-27-1300-kv-copy.md", "**" + ZH_NOTE + "**")
    other = parsed("inbox/flyp/2026-09-27-1100-spec.md", ZH_OTHER)
    by = {s.path: s for s in brief([copy, other, edited, first]).sources}
    assert by[first.path].status != "duplicate" and by[first.path].duplicate_kind is None
    assert by[other.path].status != "duplicate"
    near, exact = by[edited.path], by[copy.path]
    assert (near.status, near.duplicate_of, near.duplicate_kind) == ("duplicate", first.path, "near")
    assert near.similarity is not None and 0.8 <= near.similarity < 1.0
    assert (exact.status, exact.duplicate_of, exact.duplicate_kind, exact.similarity) == (
        "duplicate",
        first.path,
        "exact",
        1.0,
    )


def test_the_threshold_setting_reaches_the_window() -> None:
    first = parsed("inbox/jay/2026-09-27-1000-kv.md", ZH_NOTE)
    edited = parsed("inbox/tom/2026-09-27-1200-kv-edited.md", ZH_NOTE_EDITED)
    statuses = {s.path: s.status for s in brief([first, edited], threshold=0.99).sources}
    assert statuses[edited.path] != "duplicate"


def test_documents_stored_before_signatures_existed_still_dedup_exactly() -> None:
    old = parsed("inbox/jay/2026-09-27-1000-kv.md", ZH_NOTE).model_copy(update={"signature": ()})
    again = parsed("inbox/tom/2026-09-27-1200-kv.md", ZH_NOTE).model_copy(update={"signature": ()})
    edited = parsed("inbox/tom/2026-09-27-1300-kv-edited.md", ZH_NOTE_EDITED)
    by = {s.path: s for s in brief([old, again, edited]).sources}
    assert by[again.path].duplicate_kind == "exact"
    assert by[edited.path].status != "duplicate"  # nothing to compare its signature with
