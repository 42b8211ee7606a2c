"""Routing to axes: every note goes to every configured axis; a living document to its own axis only."""

import hashlib
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from processors.axes import assign_axes
from processors.documents import parse_document
from processors.fan_out import DocumentEvent, route_read
from processors.models import AxisSpec, Document, RawFile
from processors.wire import decode_rows, encode_events

SH = ZoneInfo("Asia/Shanghai")
AXES = [
    AxisSpec(name="inference", keywords=("KV cache", "推理"), living_doc="living/inference.md"),
    AxisSpec(name="llm-infra", keywords=("kafka", "GPU"), living_doc="living/llm-infra.md"),
    AxisSpec(name="risk", keywords=("attack",)),
    AxisSpec(name="llm-application", keywords=("agent",)),
]
EVERY = [a.name for a in AXES]


def parse(path: str, text: str) -> Document:
    data = text.encode("utf-8")
    raw = RawFile(
        path=path,
        content=data,
        size=len(data),
        mtime=datetime(2026, 9, 26, tzinfo=UTC).timestamp(),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return parse_document(raw, zone=SH)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # A risk note that says "side-channel" where the risk keyword is "attack": no keyword of any axis.
        (
            "inbox/flyp/2026-09-26-1000-x.md",
            "# Detokenization timing\nA side-channel leaks other users' output.\n",
        ),
        ("inbox/a/2026-09-26-x.md", "A new kv CACHE trick"),
        ("inbox/a/2026-09-26-x.md", "---\naxes: [llm-application, unknown]\n---\nplain"),
        # A card whose primary axis is not configured.
        ("paper_cards/1-2609-19969.md", "---\nprimary: multimodal\n---\n# card\n"),
        (
            "paper_cards/1-2609-19969.md",
            "---\nprimary: llm-application\nanchors:\n  llm-infra: §3.3\n---\n# c\n",
        ),
        ("work-queue/2026-09-26.md", "# q"),
        # An earlier briefing is a baseline for its axis and a reference for the others.
        ("inbox/b/2026-09-26-llm-infra-e1prep.md", "# prep\nplain"),
        ("inbox/b/2026-09-26-gone-e1prep.md", "# prep of an axis not configured"),
    ],
)
def test_every_note_card_queue_and_briefing_goes_to_every_axis_in_config_order(path: str, text: str) -> None:
    assert assign_axes(parse(path, text), AXES) == EVERY


def test_living_doc_goes_to_its_own_axis_only() -> None:
    assert assign_axes(parse("living/inference.md", "# inference.md v1\nkafka agent"), AXES) == ["inference"]
    assert assign_axes(parse("living/llm-application.md", "# x"), AXES) == ["llm-application"]
    assert assign_axes(parse("living/other.md", "# KV cache"), AXES) == []


def test_a_note_fanned_out_to_every_axis_is_encoded_once_and_its_body_shared() -> None:
    raw = RawFile(
        path="inbox/a/2026-09-26-x.md",
        content=b"# x\n" + b"side-channel " * 500,
        size=6504,
        mtime=0.0,
        sha256="s",
    )
    events = route_read(raw, AXES, zone=SH, max_bytes=1 << 20, seen_at=datetime(2026, 9, 26, tzinfo=UTC))[0]
    assert [e.axis for e in events] == EVERY and len({id(e.document) for e in events}) == 1
    ((key, value),) = encode_events(events, {})  # one partition: one record for every axis
    assert key == EVERY[0].encode()
    assert [row.header.axis for row in decode_rows(value)] == EVERY


@pytest.mark.parametrize("offset", [None, 7])
def test_a_note_s_events_are_what_validating_their_values_makes(offset: int | None) -> None:
    # Built from validated values, not validated again: the same events, each field of its type.
    raw = RawFile(
        path="living/inference.md", content=b"# inference.md v1\nKV cache", size=26, mtime=1.5, sha256="s"
    )
    seen = datetime(2026, 9, 26, tzinfo=UTC)
    for ev in route_read(raw, AXES, zone=SH, max_bytes=1 << 20, seen_at=seen, raw_offset=offset)[0]:
        assert DocumentEvent.model_validate(dict(vars(ev))) == ev
        assert ev.model_fields_set == set(DocumentEvent.model_fields)
