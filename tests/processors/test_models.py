"""`built` makes what pydantic's model_construct makes from every field, only faster: equal, same JSON, same
fields set, frozen, and copied like any model."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from processors.models import Frozen, NoIncrementSource, Relevance, SourceEntry, built

WHEN = datetime(2026, 9, 27, 10, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
REL: dict[str, Any] = {"label": "高", "code": "high", "stars": 4, "score": 0.3312, "terms": ("vllm", "推理")}
ENTRY: dict[str, Any] = {
    "path": "inbox/jay/2026-09-27-1000-a.md",
    "writer": "jay",
    "kind": "inbox",
    "event_time": WHEN,
    "bytes": 1234,
    "title": "vLLM 推理",
    "relevance": Relevance.model_construct(**REL),
    "status": "duplicate",
    "duplicate_of": "inbox/tom/a.md",
    "duplicate_kind": "near",
    "similarity": 0.84375,
    "warnings": ("w",),
    "warning_codes": ("no_stamp",),
    "topic": "KV cache",
}


@pytest.mark.parametrize(
    ("cls", "values"),
    [
        (Relevance, REL),
        (SourceEntry, ENTRY),
        (NoIncrementSource, {"path": "a.md", "reason": "重复", "code": "duplicate"}),
    ],
)
def test_built_is_model_construct_of_every_field(cls: type[Frozen], values: dict[str, Any]) -> None:
    fast, slow = built(cls, dict(values)), cls.model_construct(**values)
    assert fast == slow and fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_fields_set == slow.model_fields_set == set(cls.model_fields)
    assert cls.model_validate_json(fast.model_dump_json()) == slow  # what a reader of the JSON gets
    with pytest.raises(ValidationError):  # frozen
        setattr(fast, next(iter(values)), "x")


def test_a_copy_of_a_built_model_has_fields_of_its_own() -> None:
    entry = built(SourceEntry, dict(ENTRY))
    used = entry.model_copy(update={"status": "used"})
    assert (used.status, entry.status) == ("used", "duplicate")
    assert entry.model_fields_set == set(SourceEntry.model_fields)
