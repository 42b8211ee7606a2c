"""A note's stored body (its text and each section's offsets) is made by the compiled pass from the offsets it
found (NoteReading.stored_body): the very bytes wire's Python writes, so documents records stay the same."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.fan_out import route_read
from processors.models import AxisSpec, RawFile
from processors.structure import read_note
from processors.wire import encode_events

_AXES = (AxisSpec(name="inference"),)
_SEEN = datetime(2026, 9, 27, 10, tzinfo=UTC)

# Lines of real notes' kinds: headings (numbered, repeated, a heading's words again as its text), fences, CJK,
# Korean, English, setext underlines, quotes and escapes, blank and white lines, other line endings.
_LINES = [
    "# 推理", "## 1.2 推理与检索", "### Results", "# x", "x", "## x", "推理", "# 추론", "추론 모델의 성능",
    "Inference at scale: 2401.12345 beats the baseline.", "```python", "```", "~~~", "# not a heading in a fence",
    "Title", "=====", "-----", '> "quoted" \\ back', "", "   ", "\t- item", "1. first", "| a | b |", "|---|---|",
    "混合 mixed 한국어 text", "#", "##  ", "x x", "😀 emoji",
]  # fmt: skip
_ENDS = ["\n", "\n", "\n", "\r\n", "\r"]


def _routed(body: str) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], bytes | None]:
    content = ("---\ntitle: t\n---\n" + body).encode()
    raw = RawFile(
        path="inbox/w/2026-09-27-1000-a.md", content=content, size=len(content), mtime=0.0, sha256="s"
    )
    events, stored_body = route_read(raw, _AXES, zone=ZoneInfo("UTC"), max_bytes=1 << 20, seen_at=_SEEN)
    return encode_events(events, {}, stored_body), encode_events(events, {}), stored_body


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_LINES), st.sampled_from(_ENDS)), max_size=40))
def test_a_record_s_body_from_the_pass_is_the_one_python_writes(lines: list[tuple[str, str]]) -> None:
    compiled, python, stored_body = _routed("".join(line + end for line, end in lines))
    assert compiled == python
    assert stored_body is not None or not python[0][1].endswith(b"}")  # an empty body is refused


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#x推 \n`~=-\r추a")), max_size=120))
def test_any_text_s_body_from_the_pass_is_the_one_python_writes(body: str) -> None:
    compiled, python, _ = _routed(body)
    assert compiled == python


@pytest.mark.parametrize(
    "body",
    [
        "# x\nx",  # the section's text is in its heading: the reference finds it there
        "# a\n\n## a\n\na\n",
        "# 推理\n推理\n\n## 推\n推\n",
        "```\n# in a fence\n```\n# 추론\n추론 모델\n",
        "Intro\n\n# One\n\n# One\n\ntext\n",
        "# Empty\n# Then\nbody\n",
    ],
)
def test_sections_the_reference_finds_elsewhere_are_written_where_it_finds_them(body: str) -> None:
    compiled, python, stored_body = _routed(body)
    assert stored_body is not None and compiled == python


def test_a_long_heading_like_its_section_is_stored_in_linear_time() -> None:
    # A long heading of one letter before a section of it: trying each of the heading's places to the end of the
    # heading was quadratic (~1.5 s for this 800 kB note, a parse process stalled); the reference's search is linear.
    body = "# " + "a" * 400_000 + "\n" + "a" * 400_000 + "b\n"
    reading = read_note(body)
    started = time.process_time()
    stored_body = reading.stored_body()
    assert time.process_time() - started < 0.25
    compiled, python, _ = _routed(body)
    assert compiled == python and stored_body in (None, python[0][1].split(b"\n")[-1])


# Characters a file may hold that the lines above lack: controls, DEL, NEL, U+2028/2029, a BOM inside, characters
# NFKC changes, emoji and CJK extension B (four bytes), quotes and escapes.
_ODD = list(
    'a #=`\n\r\t\x01\x0b\x0c\x1f\x7f\x85\u2028\u2029\ufeff\ufb01\u2460\uff21\U0001f600\U00020000"\\推'
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["", "---\ntitle: t\n---\n", "---\r\ntitle: t\r\n---\r\n", "---\ntitle: [\n---\n"]),
    st.text(alphabet=st.sampled_from(_ODD), max_size=150),
    st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32", "gb18030"]),
)
def test_a_file_s_odd_characters_and_encodings_give_the_records_python_writes(
    front: str, body: str, codec: str
) -> None:
    content = (front + body).encode(codec, errors="replace")
    raw = RawFile(
        path="inbox/w/2026-09-27-1000-a.md", content=content, size=len(content), mtime=0.0, sha256="s"
    )
    events, stored_body = route_read(raw, _AXES, zone=ZoneInfo("UTC"), max_bytes=1 << 20, seen_at=_SEEN)
    assert events[0].document is None or stored_body is not None
    assert encode_events(events, {}, stored_body) == encode_events(events, {})
