import codecs
import hashlib
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.parse_growth import SHAPES
from processors import documents
from processors.arxiv_ids import MAX_LISTED_IDS_PER_NOTE
from processors.documents import parse_document
from processors.errors import ParseError
from processors.front_matter import split_front_matter
from processors.models import Document, RawFile
from processors.structure import read_note
from tests.processors.reference.text import normalise_text, text_hash

SH = ZoneInfo("Asia/Shanghai")
MTIME = datetime(2026, 9, 26, 1, 0, tzinfo=UTC).timestamp()


def raw(path: str, content: bytes | str, *, size: int | None = None) -> RawFile:
    data = content.encode("utf-8") if isinstance(content, str) else content
    return RawFile(
        path=path,
        content=data,
        size=len(data) if size is None else size,
        mtime=MTIME,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def parse(path: str, content: bytes | str) -> Document:
    return parse_document(raw(path, content), zone=SH)


def test_inbox_note_with_front_matter() -> None:
    doc = parse(
        "inbox/alice/2026-09-26-kv.md",
        "---\ntitle: KV notes\ndate: 2026-09-26T10:30:00\naxes: [inference, llm-infra]\ntags: a, b\n---\n"
        "# Heading\nSee arXiv:2609.23130v1.\n",
    )
    assert doc.kind == "inbox"
    assert doc.writer == "alice"
    assert doc.title == "KV notes"
    assert doc.event_time == datetime(2026, 9, 26, 10, 30, tzinfo=SH)
    assert doc.axes == ("inference", "llm-infra")
    assert doc.tags == ("a", "b")
    assert doc.arxiv_ids == ("2609.23130",)
    assert doc.front_matter["date"] == "2026-09-26T10:30:00"
    assert doc.text.startswith("# Heading")
    assert doc.text_hash == text_hash(doc.text) == read_note(doc.text).text_hash
    assert doc.warnings == ()


def test_event_time_from_file_name_stamps() -> None:
    assert parse("inbox/a/2026-09-26-x.md", "x").event_time == datetime(2026, 9, 26, tzinfo=SH)
    assert parse("inbox/a/2026-09-26-1415-x.md", "x").event_time == datetime(2026, 9, 26, 14, 15, tzinfo=SH)
    assert parse("inbox/a/2026-09-26T0905-x.md", "x").event_time == datetime(2026, 9, 26, 9, 5, tzinfo=SH)


def test_event_time_falls_back_to_mtime_with_warning() -> None:
    doc = parse("inbox/a/notes.md", "hello")
    assert doc.event_time == datetime(2026, 9, 26, 9, 0, tzinfo=SH)
    assert doc.event_time.tzinfo is not None
    assert any("mtime" in w for w in doc.warnings)


def test_front_matter_date_only_and_aware() -> None:
    assert parse("inbox/a/x.md", "---\ndate: 2026-09-25\n---\nx").event_time == datetime(
        2026, 9, 25, tzinfo=SH
    )
    doc = parse("inbox/a/x.md", "---\ndate: '2026-09-25T00:00:00Z'\n---\nx")
    assert doc.event_time == datetime(2026, 9, 25, 8, 0, tzinfo=SH)


@pytest.mark.parametrize(
    ("stem", "axis"),
    [
        ("2026-09-26-inference-e1prep", "inference"),
        ("2026-09-27-llm-infra-e1prep", "llm-infra"),
        ("2026-09-27-1030-risk-e1prep", "risk"),
        ("inference-e1prep", "inference"),
    ],
)
def test_baseline_notes(stem: str, axis: str) -> None:
    doc = parse(f"inbox/bob/{stem}.md", "# E1 prep\n")
    assert doc.kind == "baseline"
    assert doc.baseline_axis == axis


@pytest.mark.parametrize(
    "stem", ["2026-09-27-1030-e1prep-notes", "2026-09-27-risk-e1prep2", "-e1prep", "e1prep"]
)
def test_a_note_that_only_mentions_e1prep_in_its_name_is_a_note(stem: str) -> None:
    doc = parse(f"inbox/bob/{stem}.md", "# E1 prep\n")
    assert (doc.kind, doc.baseline_axis) == ("inbox", None)


def test_paper_card_ids_put_file_name_first() -> None:
    doc = parse("paper_cards/1417-2609-19969.md", "---\narxiv: 2609.11111\n---\n# Card\nsee 2609.22222\n")
    assert doc.kind == "paper_card"
    assert doc.arxiv_ids == ("2609.19969", "2609.11111", "2609.22222")
    assert doc.title == "Card"


def test_a_note_citing_more_ids_than_a_briefing_lists_keeps_them_all_with_a_warning() -> None:
    ids = [f"2609.{10000 + n}" for n in range(MAX_LISTED_IDS_PER_NOTE + 1)]
    doc = parse("inbox/jay/2026-09-27-1000-dump.md", "# dump\n" + " ".join(ids) + " " + ids[0])
    assert doc.arxiv_ids == tuple(ids)
    assert doc.warning_codes == ("many_ids",)
    assert doc.warnings == (
        f"cites {len(ids)} arXiv ids; a briefing lists the first {MAX_LISTED_IDS_PER_NOTE}",
    )
    assert parse("inbox/jay/2026-09-27-1000-digest.md", "# d\n" + " ".join(ids[1:])).warnings == ()
    assert parse("living/inference.md", "# inference.md v3\n" + " ".join(ids)).warnings == ()


def test_work_queue_and_living_version() -> None:
    assert parse("work-queue/2026-09-26.md", "# q").kind == "work_queue"
    living = parse("living/inference.md", "# inference.md v3.44\n## §3 Method\n### §3.3 Cache\ntext\n")
    assert living.kind == "living"
    assert living.version == "v3.44"
    assert parse("living/x.md", "---\nversion: 2.1\n---\n# x\n").version == "v2.1"


def test_sections_and_numbers() -> None:
    doc = parse(
        "living/inference.md",
        "intro\n# inference.md v3\n## §3 Method\nm\n### §3.3 Cache Compression\nc1\nc2\n"
        "## 2.4. Plain number\np\n## 附录 §5.1 extra\n## No number ##\n```\n# not a heading\n```\n",
    )
    got = [(s.number, s.heading, s.level, s.text) for s in doc.sections]
    assert got == [
        (None, "", 0, "intro"),
        (None, "inference.md v3", 1, ""),
        ("§3", "§3 Method", 2, "m"),
        ("§3.3", "§3.3 Cache Compression", 3, "c1\nc2"),
        ("§2.4", "2.4. Plain number", 2, "p"),
        ("§5.1", "附录 §5.1 extra", 2, ""),
        (None, "No number", 2, "```\n# not a heading\n```"),
    ]
    assert doc.headings[0] == "inference.md v3"


def test_title_falls_back_to_stem() -> None:
    assert parse("inbox/a/2026-09-26-plain.md", "no heading").title == "2026-09-26-plain"


def test_malformed_front_matter_keeps_document() -> None:
    doc = parse("inbox/a/2026-09-26-x.md", "---\ntitle: [unclosed\n---\n# Body\n")
    assert doc.title == "Body"
    assert doc.text == "# Body\n"
    assert any("front matter" in w for w in doc.warnings)
    doc = parse("inbox/a/2026-09-26-x.md", "---\n- a list\n---\nbody")
    assert doc.text == "body"
    assert any("mapping" in w for w in doc.warnings)
    doc = parse("inbox/a/2026-09-26-x.md", "---\ntitle: x\nno closing\n")
    assert any("closing" in w for w in doc.warnings)


def test_billion_laughs_front_matter_is_ignored() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    doc = parse("inbox/a/2026-09-26-x.md", "---\n" + "\n".join(lines) + "\n---\nbody")
    assert doc.front_matter == {}
    assert doc.text == "body"


def test_encodings() -> None:
    bom = parse("inbox/a/2026-09-26-x.md", b"\xef\xbb\xbf# T\n")
    assert bom.title == "T"
    assert bom.warnings == ()
    gb = parse("inbox/a/2026-09-26-x.md", "# 七大趋势\n".encode("gb18030"))
    assert gb.title == "七大趋势"
    assert any("GB18030" in w for w in gb.warnings)


def test_rejections() -> None:
    with pytest.raises(ParseError, match="over the limit"):
        parse_document(raw("inbox/a/x.md", "x" * 20), zone=SH, max_bytes=10)
    with pytest.raises(ParseError, match="over the limit"):
        parse_document(raw("inbox/a/x.md", "x", size=11), zone=SH, max_bytes=10)
    with pytest.raises(ParseError, match="NUL"):
        parse("inbox/a/x.md", b"ab\x00cd")
    for path in ("other/x.md", "inbox/x.md", "x.md", "living/"):
        with pytest.raises(ParseError, match="not under"):
            parse(path, "x")


def test_normalise_text_ignores_markup_and_case() -> None:
    assert normalise_text("# **Hello**   World\n\n| a |") == normalise_text("hello world a")
    assert text_hash("ＡＢＣ") == text_hash("abc")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_give_document_or_parse_error(data: bytes) -> None:
    try:
        doc = parse("inbox/a/2026-09-26-x.md", data)
    except ParseError:
        return
    assert doc.event_time.tzinfo is not None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("-#§:\n []{}*&!|'\"`~0123456789.v七xa ")), max_size=300))
def test_a_document_is_what_validating_all_its_values_makes(text: str) -> None:
    # The compiled pass's values go in unvalidated: of the types validation would make of them, or records and
    # equality would differ from a document read back.
    try:
        doc = parse("inbox/a/2026-09-26-x.md", text)
    except ParseError:
        return
    assert Document.model_validate(dict(vars(doc))) == doc
    assert doc.signature == () or type(doc.signature[0]) is int


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("-#§:\n []{}*&!|'\"`~0123456789.v七xa")), max_size=300))
def test_markdown_like_text_never_crashes(text: str) -> None:
    for prefix in ("", "---\n"):
        try:
            doc = parse("paper_cards/1-2609-19969.md", prefix + text)
        except ParseError:
            continue
        assert doc.arxiv_ids[0] == "2609.19969"


def test_sections_come_from_the_markdown_parser() -> None:
    doc = parse(
        "inbox/a/2026-09-26-x.md",
        "Setext title\n============\n\n<div>\n\n# not a heading inside HTML? it is: HTML blocks end at a blank line\n"
        "\n    # indented code is no heading\n\n## cs.HC [[Back]](#toc)\nx\n",
    )
    assert doc.title == "Setext title"
    assert [s.heading for s in doc.sections] == [
        "Setext title",
        "not a heading inside HTML? it is: HTML blocks end at a blank line",
        "cs.HC",
    ]
    assert doc.sections[1].text == "# indented code is no heading".rjust(33)


def test_titled_ids_come_with_the_document() -> None:
    doc = parse(
        "living/kv.md",
        "# KV\n## Pruning\n1. [**SnapKV: LLM Knows What You are Looking for Before Generation.**]"
        "(https://arxiv.org/abs/2404.14469) *Yuhong Li, Yingbing Huang.* Arxiv 2024.\n",
    )
    assert [(t.id, t.title) for t in doc.titled or ()] == [
        ("2404.14469", "SnapKV: LLM Knows What You are Looking for Before Generation")
    ]


@pytest.mark.timeout(
    60
)  # a hang guard, not a figure: linear takes ~1 s; how time grows is `bench.parse_growth`
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_hostile_note_eight_times_the_one_that_hung_parses_whole(shape: str) -> None:
    # Issue 15: 80,000 blank lines hung a parse process (a regex backtracking over every following line); a
    # quadratic pass over 640,000 characters of these shapes would run for hours.
    text = SHAPES[shape](640_000)
    doc = parse("inbox/a/2026-09-26-x.md", text)
    body = text.split("\n---\n", 1)[1] if shape == "long-title" else text
    assert doc.text == body
    if shape == "headings":
        assert len(doc.sections) == 640_000 // len("# h\n")


@pytest.mark.parametrize(
    "content",
    [
        "---\ntitle: 缓存\n---\n# KV 缓存\n正文\n".encode(),
        codecs.BOM_UTF8 + "---\r\ntitle: x\r\n---\r\n\r\n# 标题\r\n".encode(),
        "# 没有 front matter\n".encode(),
        "---\ntitle: [unclosed\n---\n体\n".encode(),
        "---\nno closing line\n体".encode(),
    ],
    ids=["front-matter", "bom-crlf", "none", "bad-yaml", "unclosed"],
)
def test_the_body_bytes_handed_to_the_compiled_pass_are_the_body(content: bytes) -> None:
    # The pass reads these instead of encoding the body again: they must be the body, byte for byte.
    text, start = documents._decode("inbox/a/x.md", content, [])
    body = split_front_matter(text, []).body
    assert documents._body_utf8(content, start, text, body) == body.encode()


def test_a_note_not_read_as_utf8_hands_the_pass_no_bytes() -> None:
    content = "标题".encode("gb18030")
    text, start = documents._decode("inbox/a/x.md", content, [])
    assert start is None and documents._body_utf8(content, start, text, text) is None
