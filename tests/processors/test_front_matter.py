"""Front matter within bounds (issue 15 item 6): a block over 64 KiB is not parsed, aliases are weighed as the
copies they expand to before anything is built, and what is refused leaves the note itself readable."""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
import yaml

from processors import front_matter
from processors.documents import Warnings
from processors.front_matter import MAX_BYTES, MAX_EXPANDED, expanded_size, split_front_matter
from processors.models import AxisSpec, RawFile
from processors.parse_stage import Routed, RouteParams, route_file

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
PARAMS = RouteParams(
    axes=(AxisSpec(name="inference", keywords=("vLLM",)),), zone=SH, max_bytes=4 << 20, message_limit=8 << 20
)
BODY = "# vLLM 推理\nKV cache body\n"


def _note(front: str) -> RawFile:
    data = f"---\n{front}\n---\n{BODY}".encode()
    return RawFile(
        path="inbox/jay/2026-09-27-1000-fm.md",
        content=data,
        size=len(data),
        mtime=NOW.timestamp(),
        sha256=hashlib.sha256(data).hexdigest(),
    )


def _routed_bytes_and_peak(front: str) -> tuple[int, int, Routed]:
    tracemalloc.start()
    try:
        routed = route_file(_note(front), PARAMS, NOW, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert routed.rejection is None
    return sum(len(v) for _, v in routed.records), peak, routed


def _aliases(string_kib: int, refs: int) -> str:
    return f"big: &b {'a' * (string_kib * 1024)}\nrefs: [{', '.join(['*b'] * refs)}]"


@pytest.mark.parametrize(
    ("front", "phrase"),
    [
        # Issue 15: 100 KiB aliased 3,125 times took 18 s and 4.35 GB; over the byte limit, it is not parsed.
        (_aliases(100, 3125), "over the limit of 65536"),
        # Within the byte limit, aliases of a long string: 8 KiB x 3,000 would be 24 MB in every record.
        (_aliases(8, 3000), "expands past its size limit"),
        # Merge keys copy a mapping's entries once per alias while the constructor runs: 9^8 entries.
        (
            "\n".join(
                ["m0: &m0 {" + ", ".join(f"k{i}: v" for i in range(9)) + "}"]
                + [f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}" for i in range(1, 9)]
            ),
            "expands past",
        ),
        ("a: &a [x, *a]", "expands past"),  # contains itself
    ],
    ids=["100KiB-x3125", "8KiB-x3000", "merge-keys", "recursive"],
)
def test_alias_bombs_are_ignored_before_they_are_built_and_the_note_is_kept(front: str, phrase: str) -> None:
    size, peak, routed = _routed_bytes_and_peak(front)
    assert routed.warning_codes == ("front_matter",) and phrase in routed.warnings[0]
    assert size < 20_000  # the record carries the note, not the expansion
    assert peak < 30 * 1024 * 1024


def test_a_front_matter_over_64_kib_is_not_parsed_and_the_body_is_kept() -> None:
    warnings: Warnings = []
    block = "tags:\n" + "- tag\n" * (MAX_BYTES // 6 + 1)
    fm = split_front_matter(f"---\n{block}---\n{BODY}", warnings)
    assert fm.fields == {} and fm.body == BODY
    assert len(warnings) == 1 and warnings[0][1].endswith(f"bytes, over the limit of {MAX_BYTES}; ignored")


def test_ordinary_aliases_and_a_long_field_are_read() -> None:
    warnings: Warnings = []
    front = f"title: &t Paged attention\nalias_of_title: *t\nabstract: {'x' * 60_000}\naxes: [inference]"
    fm = split_front_matter(f"---\n{front}\n---\n{BODY}", warnings)
    assert warnings == []
    assert fm.fields["alias_of_title"] == "Paged attention" and len(str(fm.fields["abstract"])) == 60_000


def test_the_weight_counts_every_alias_as_a_copy_and_each_shared_node_once() -> None:
    node = yaml.compose("s: &s abcd\nl: [*s, *s, *s]", Loader=yaml.SafeLoader)
    assert node is not None
    # mapping 1 + "s" 2 + "abcd" 5 + "l" 2 + list 1 + three copies of "abcd" 15
    assert expanded_size(node, MAX_EXPANDED) == 26
    wide = yaml.compose("a: &a [" + ", ".join(["x"] * 100) + "]\nb: [" + ", ".join(["*a"] * 100) + "]")
    assert wide is not None
    assert expanded_size(wide, 1000) == 1001  # capped, not counted to the end


def test_nested_aliases_are_weighed_by_their_text_and_refused_not_expanded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each level doubles the expansion (2^400 copies): the weighing walk must follow the 2x text, and the
    # document must be refused before anything is built. Counted in nodes visited, not timed.
    visits = [0]
    children = front_matter._children

    def counting(node: yaml.Node) -> Iterator[yaml.Node]:
        visits[0] += 1
        return children(node)

    monkeypatch.setattr(front_matter, "_children", counting)

    def visited(levels: int) -> int:
        front = "\n".join(
            ["l0: &l0 [x, x]"] + [f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]" for i in range(1, levels)]
        )
        warnings: Warnings = []
        visits[0] = 0
        fm = split_front_matter(f"---\n{front}\n---\nbody", warnings)
        assert fm.fields == {} and fm.body == "body"
        assert warnings == [
            ("front_matter", "front matter expands past its size limit through aliases; ignored")
        ]
        return visits[0]

    small, large = visited(200), visited(400)
    # Each level is a few composed nodes, each visited a constant number of times.
    assert large <= 2 * small + 10 and large < 10 * 400, f"200 levels: {small} visits, 400 levels: {large}"


def test_the_records_front_matter_is_every_value_as_json_reads_it() -> None:
    # Plain values kept, dates as ISO text, bytes as base64, a float JSON cannot hold as text, keys as text,
    # sets and nested lists and mappings copied member by member.
    front = (
        "title: 'KV cache'\ndate: 2026-09-27T07:15:43+08:00\nday: 2026-09-26\nn: 3\nok: true\nnone: null\n"
        "ratio: 0.5\nbad: .nan\n1: one\nblob: !!binary aGk=\nids: !!set {a: null}\n"
        "nested: {list: [1, 2026-09-25, {deep: [x, .inf]}], 2: [true, null]}"
    )
    warnings: Warnings = []
    fm = split_front_matter(f"---\n{front}\n---\n{BODY}", warnings)
    assert warnings == []
    assert fm.fields == {
        "title": "KV cache",
        "date": "2026-09-27T07:15:43+08:00",
        "day": "2026-09-26",
        "n": 3,
        "ok": True,
        "none": None,
        "ratio": 0.5,
        "bad": "nan",
        "1": "one",
        "blob": "aGk=",
        "ids": ["a"],
        "nested": {"list": [1, "2026-09-25", {"deep": ["x", "inf"]}], "2": [True, None]},
    }
    assert fm.date == datetime.fromisoformat("2026-09-27T07:15:43+08:00")


@pytest.mark.parametrize(
    ("items", "kept"), [(front_matter.NODE_BUDGET - 2, True), (front_matter.NODE_BUDGET - 1, False)]
)
def test_a_front_matter_of_more_values_than_its_budget_is_ignored(items: int, kept: bool) -> None:
    # The mapping, its list and each item: one value each, the budget's worth kept, one more refused.
    warnings: Warnings = []
    fm = split_front_matter(f"---\nids: [{', '.join(['x'] * items)}]\n---\n{BODY}", warnings)
    assert (fm.fields == {"ids": ["x"] * items}) is kept and fm.body == BODY
    assert warnings == (
        [] if kept else [("front_matter", "front matter is too large or too deeply nested; ignored")]
    )
