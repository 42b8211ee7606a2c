"""Fuzz: whatever bytes, Markdown, front matter, path or stat arrive, the parser answers a Document or a ParseError."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.documents import parse_document
from processors.errors import ParseError
from processors.fan_out import route_read
from processors.models import AxisSpec, Document, RawFile

ZONES = [ZoneInfo("Asia/Shanghai"), ZoneInfo("UTC"), ZoneInfo("America/New_York")]
AXES = (AxisSpec(name="inference", keywords=("vLLM", "推理")), AxisSpec(name="risk", keywords=("安全",)))

words = st.text(alphabet=st.sampled_from(list("abcxyz 推理安全§#*|<>&:-_.0123456789vV\t")), max_size=20)
stamps = st.sampled_from(
    ["2026-09-27-", "2026-09-27-1015-", "2026-09-27T1015-", "2026-13-45-", "9999-99-99-", ""]
)
paths = st.builds(
    lambda folder, stamp, name, ext: f"{folder}{stamp}{name}{ext}",
    st.sampled_from(
        ["inbox/jay/", "inbox/", "paper_cards/", "work-queue/", "living/", "other/", "", "inbox/jay/x/"]
    ),
    stamps,
    st.one_of(words, st.sampled_from(["1417-2609-19969", "1-2613-00000", "inference-e1prep", "risk"])),
    st.sampled_from([".md", "", ".MD", ".txt"]),
)
yaml_scalars = st.one_of(
    words,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "2026-09-27",
            "2026-09-27T10:00:00+08:00",
            "'2026-99-99'",
            "!!python/object:os.system {}",
            "!!binary aGk=",
            "&a [1, 2]",
            "*a",
            "*undefined",
            "{a: [",
            "null",
            "~",
            "yes",
            "0x1F",
            ".inf",
            "|\n  block",
        ]
    ),
)
front_matter = st.dictionaries(
    st.sampled_from(
        ["title", "date", "axes", "tags", "arxiv", "primary", "anchors", "version", "writer", "x"]
    ),
    st.one_of(
        yaml_scalars, st.lists(yaml_scalars, max_size=4).map(lambda v: "[" + ", ".join(map(str, v)) + "]")
    ),
    max_size=6,
).map(lambda d: "---\n" + "".join(f"{k}: {v}\n" for k, v in d.items()) + "---\n")
blocks = st.one_of(
    st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), words),
    st.builds(lambda t: f"## §{t}", st.sampled_from(["1", "3.3", "2.4.1", "x"])),
    st.sampled_from(
        ["```", "~~~", "| a | b |", "|---|---|", "> quote", "- item", "⚠ 待核实", "---", "\r\n", "\x0c"]
    ),
    st.sampled_from(
        ["arXiv:2609.23130v2", "arXiv 2613.12345", "https://arxiv.org/pdf/2609.1234", "hep-th/9901001"]
    ),
    words,
)
markdown = st.builds(
    lambda fm, body: fm + "\n".join(body), st.one_of(st.just(""), front_matter), st.lists(blocks, max_size=30)
)
encodings = st.sampled_from(["utf-8", "utf-8-sig", "gb18030", "utf-16", "latin-1"])
contents = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda md, enc: md.encode(enc, errors="replace"), markdown, encodings),
)
mtimes = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -1.0, 1e12, 2e9]))


def check(raw: RawFile, zone: ZoneInfo, max_bytes: int) -> Document | None:
    try:
        doc = parse_document(raw, zone=zone, max_bytes=max_bytes)
    except ParseError as exc:
        assert str(exc)
        # A refusal the parser decided on, not a crash that parse_document's safety net turned into one.
        assert exc.__cause__ is None, exc
        return None
    assert doc.path == raw.path and doc.event_time.tzinfo is not None
    # Built without validation: what validating its values makes is the same document, value for value.
    validated = Document.model_validate(vars(doc))
    assert validated == doc and validated.model_dump_json() == doc.model_dump_json()
    assert all(type(v) is type(getattr(validated, k)) for k, v in vars(doc).items())
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths, contents, mtimes, st.sampled_from(ZONES), st.integers(0, 5000), st.one_of(st.none(), words))
def test_the_parser_answers_a_document_or_its_own_error(
    path: str, content: bytes, mtime: float, zone: ZoneInfo, size_delta: int, refused: str | None
) -> None:
    raw = RawFile(
        path=path,
        content=content,
        size=len(content) + size_delta % 3 * size_delta,
        mtime=mtime,
        sha256=hashlib.sha256(content).hexdigest(),
        refused=refused,
    )
    check(raw, zone, max_bytes=4096)
    # Routing adds axes and the empty-file rule, and never raises either.
    events = route_read(raw, AXES, zone=zone, max_bytes=4096, seen_at=datetime(2026, 9, 27, tzinfo=UTC))[0]
    assert all(e.type in ("document", "rejection") for e in events)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown)
def test_random_markdown_under_every_folder(text: str) -> None:
    data = text.encode()
    for path in ("inbox/jay/2026-09-27-x.md", "paper_cards/1417-2609-19969.md", "living/inference.md"):
        raw = RawFile(path=path, content=data, size=len(data), mtime=0.0, sha256="x")
        doc = check(raw, ZONES[0], max_bytes=1 << 20)
        assert doc is not None, path  # well-formed Markdown in the right folder is always a note
        if path.startswith("paper_cards"):
            assert doc.arxiv_ids[0] == "2609.19969"
