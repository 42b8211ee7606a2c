"""Each kind of bad input, at the processors: rejected with a reason and a label, or kept with a warning."""

from __future__ import annotations

import codecs
import hashlib
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from processors.documents import parse_document
from processors.errors import ParseError
from processors.fan_out import DocumentEvent, route_read
from processors.models import AxisSpec, Document, RawFile
from processors.reasons import REJECTION_CODES, WARNING_CODES

SH = ZoneInfo("Asia/Shanghai")
AXES = (AxisSpec(name="inference", keywords=("vLLM", "推理")),)
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)


def raw(path: str, content: bytes, **extra: object) -> RawFile:
    return RawFile(
        path=path,
        content=content,
        size=int(extra.pop("size", len(content))),  # type: ignore[call-overload]
        mtime=NOW.timestamp(),
        sha256=hashlib.sha256(content).hexdigest(),
        **extra,
    )


def route(r: RawFile, max_bytes: int = 4 * 1024 * 1024) -> list[DocumentEvent]:
    return route_read(r, AXES, zone=SH, max_bytes=max_bytes, seen_at=NOW)[0]


def rejected(r: RawFile, max_bytes: int = 4 * 1024 * 1024) -> tuple[str, str]:
    events = route(r, max_bytes)
    assert [e.type for e in events] == ["rejection"], events
    assert events[0].reason_code is not None
    return events[0].reason_code, events[0].reason or ""


def kept(r: RawFile) -> Document:
    events = route(r)
    assert events and all(e.type == "document" for e in events), events
    doc = events[0].document
    assert doc is not None
    return doc


@pytest.mark.parametrize(
    ("content", "label", "phrase"),
    [
        (b"# vLLM\x00\x01\x02", "binary", "NUL bytes"),
        (b"", "empty", "file is empty"),
        (b" \n\t\n", "empty", "file is empty"),
        (b"\xef\xbb\xbf\n", "empty", "file is empty"),
    ],
)
def test_rejected_contents(content: bytes, label: str, phrase: str) -> None:
    # A path that itself names a label must not decide the label.
    got_label, reason = rejected(raw("inbox/jay/2026-09-27-binary-limit-symlink.md", content))
    assert got_label == label and phrase in reason


def test_an_oversized_file_travels_without_bytes_and_is_rejected_for_its_size() -> None:
    label, reason = rejected(raw("inbox/jay/2026-09-27-huge.md", b"", size=5 * 1024 * 1024))
    assert label == "limit" and "5242880 bytes, over the limit of 4194304" in reason
    label, _ = rejected(raw("inbox/jay/2026-09-27-x.md", b"vLLM " * 10), max_bytes=20)
    assert label == "limit"


@pytest.mark.parametrize(
    ("why", "label"),
    [
        ("it is a symlink; only regular files under the root are read", "symlink"),
        ("it resolves outside the root (a symlinked folder); not read", "outside"),
        ("it is not a regular file (a FIFO, socket or device)", "special"),
        ("it is unreadable (Permission denied)", "unreadable"),
    ],
)
def test_a_watcher_refusal_becomes_a_rejection_with_its_reason(why: str, label: str) -> None:
    got, reason = rejected(raw("inbox/jay/2026-09-27-x.md", b"", refused=why, refused_code=label))
    assert (got, reason) == (label, f"inbox/jay/2026-09-27-x.md: {why}")


def test_a_refusal_keeps_its_code_whatever_its_message_says() -> None:
    # The label comes from the code the watcher sent, never from the words: rewording changes no label.
    got, _ = rejected(
        raw("inbox/jay/2026-09-27-x.md", b"", refused="it is binary and empty", refused_code="special")
    )
    assert got == "special"
    # A refusal recorded before codes existed is a generic parse rejection.
    assert rejected(raw("inbox/jay/2026-09-27-x.md", b"", refused="it is a symlink"))[0] == "parse"


def test_the_codes_are_the_metric_labels_dashboards_and_alerts_use() -> None:
    assert set(REJECTION_CODES) == {
        "binary", "limit", "empty", "outside", "symlink", "special", "unreadable", "vanished", "bad_name", "parse",
        "damaged", "row_missing",
    }  # fmt: skip
    assert set(WARNING_CODES) == {"decode", "front_matter", "no_stamp", "arxiv_id", "many_ids"}


def test_not_utf8_is_decoded_with_a_fallback_and_a_warning() -> None:
    gb = kept(raw("inbox/jay/2026-09-27-gb.md", "# vLLM 推理笔记\n".encode("gb18030")))
    assert gb.title == "vLLM 推理笔记"
    assert gb.warning_codes == ("decode",)
    latin = kept(raw("inbox/jay/2026-09-27-latin.md", b"# vLLM caf\xe9 \xff\xfe serving\n"))
    assert "vLLM" in latin.title and any("not valid UTF-8" in w for w in latin.warnings)
    assert latin.warning_codes == ("decode",)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_decoded_like_the_other_encodings(codec: str) -> None:
    # Issue 15: a UTF-16 note was rejected as binary (its NUL bytes were checked before it was decoded).
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(codec) or (
        codecs.BOM_UTF32_LE if codec == "utf-32-le" else codecs.BOM_UTF32_BE
    )
    text = "---\ntitle: vLLM 推理笔记\n---\n# 标题\nvLLM 0.3.3 arXiv:2609.23130\n"
    doc = kept(raw("inbox/jay/2026-09-27-1000-wide.md", bom + text.encode(codec)))
    assert (doc.title, doc.text, doc.arxiv_ids, doc.warnings) == (
        "vLLM 推理笔记",
        "# 标题\nvLLM 0.3.3 arXiv:2609.23130\n",
        ("2609.23130",),
        (),
    )
    label, reason = rejected(raw("inbox/jay/2026-09-27-bin.md", bom + "# vLLM\x00\x01".encode(codec)))
    assert label == "binary" and "NUL bytes" in reason
    assert rejected(raw("inbox/jay/2026-09-27-blank.md", bom + " \n".encode(codec)))[0] == "empty"


def test_a_utf16_note_cut_mid_character_keeps_what_decodes_with_a_warning() -> None:
    doc = kept(
        raw("inbox/jay/2026-09-27-cut.md", codecs.BOM_UTF16_LE + "# vLLM 推理\n".encode("utf-16-le") + b"x")
    )
    assert doc.title == "vLLM 推理"
    assert doc.warning_codes == ("decode",)


@pytest.mark.parametrize(
    "front",
    [
        "title: [unclosed",
        "!!python/object/apply:os.system ['touch {pwned}']",
        "x: !!python/object:__main__.Evil {}",
        "\n".join(
            ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
            + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
        ),
        "- just\n- a list",
        "date: [1, 2]",
    ],
)
def test_hostile_or_malformed_front_matter_keeps_the_document(front: str, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    front = front.replace("{pwned}", str(pwned))
    doc = kept(raw("inbox/jay/2026-09-27-1000-fm.md", f"---\n{front}\n---\n# vLLM 推理\nbody\n".encode()))
    assert doc.title == "vLLM 推理" and doc.text == "# vLLM 推理\nbody\n"
    assert doc.event_time == datetime(2026, 9, 27, 10, 0, tzinfo=SH)
    assert doc.warnings and doc.warning_codes == ("front_matter",) * len(doc.warnings)
    assert not pwned.exists()  # the safe loader ran nothing


def test_a_file_name_without_stamp_takes_its_mtime_with_a_warning() -> None:
    doc = kept(raw("inbox/jay/notes-on-vllm.md", b"# vLLM serving\n"))
    assert doc.event_time == NOW.astimezone(SH)
    assert doc.warning_codes == ("no_stamp",)


def test_arxiv_looking_strings_that_are_not_ids_are_warned_and_not_cited() -> None:
    text = "# vLLM\narXiv:2613.12345, arXiv 2609.1234, https://arxiv.org/abs/2609.123456 and arXiv:2609.23130v2\n"
    doc = kept(raw("inbox/jay/2026-09-27-ids.md", text.encode()))
    assert doc.arxiv_ids == ("2609.23130",)
    assert doc.warning_codes == ("arxiv_id",) * 3 and len(doc.warnings) == 3
    plain = kept(
        raw("inbox/jay/2026-09-27-plain.md", b"# vLLM\nvLLM 0.30.0, 1.7% and 2609.1234 without a prefix\n")
    )
    assert plain.warning_codes == ()  # only what is announced as an id (`arXiv:`, a URL) is warned of
    card = kept(raw("paper_cards/1417-2613-19969.md", b"---\nprimary: inference\n---\n# card\n"))
    assert card.arxiv_ids == () and card.warning_codes == ("arxiv_id",)


def test_a_ten_thousand_line_document_is_parsed_whole() -> None:
    lines = [f"- line {i}: vLLM 推理 KV cache hit {i % 100}%" for i in range(10_000)]
    body = "# 万行笔记\n" + "\n".join(lines) + "\n## §2 tail\nthe end\n"
    doc = kept(raw("inbox/jay/2026-09-27-long.md", body.encode()))
    assert doc.text.count("\n") == 10_003
    assert [s.heading for s in doc.sections] == ["万行笔记", "§2 tail"]
    assert doc.signature  # near-duplicate detection still has a signature


def test_paths_outside_the_known_folders_are_rejected_as_parse_errors() -> None:
    for path in ("inbox/x.md", "other/x.md"):
        with pytest.raises(ParseError, match="not under"):
            parse_document(raw(path, b"# x\n"), zone=SH)
        assert rejected(raw(path, b"# x\n"))[0] == "parse"


def test_a_rejection_carries_its_file_s_time_from_the_name_stamp_else_the_mtime() -> None:
    # A re-emitted past window lists the files rejected in it: by their time, not by when the worker saw them.
    stamped = route(raw("inbox/jay/2026-09-20-0930-x.md", b"\x00"))
    assert {e.event_time for e in stamped} == {datetime(2026, 9, 20, 9, 30, tzinfo=SH)}
    unstamped = route(raw("inbox/jay/notes.md", b"\x00"))
    assert {e.event_time for e in unstamped} == {NOW}
    assert all(e.seen_at == NOW and e.reason_code == "binary" for e in [*stamped, *unstamped])


def test_a_deletion_carries_its_file_s_time_and_no_reason() -> None:
    gone = route(raw("inbox/jay/2026-09-20-x.md", b"", deleted=True))
    assert [(e.type, e.event_time, e.reason_code) for e in gone] == [
        ("deletion", datetime(2026, 9, 20, tzinfo=SH), None)
    ]
