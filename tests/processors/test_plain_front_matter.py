"""The front matter read without PyYAML equals PyYAML's reading of it, or is left to PyYAML.

processors.plain_front_matter reads flat `key: value` front matter in the compiled pass with PyYAML's own
resolver; a block it accepts must load to exactly what `yaml.load(block, CSafeLoader)` builds (types, order
and all), or a note's fields, date and record would change with the shortcut. It must also accept and decline
exactly what its Python reference (one regex per line, tests/processors/reference/) does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.documents import Warnings
from processors.front_matter import split_front_matter
from processors.plain_front_matter import read_plain
from tests.processors.reference import plain_front_matter as reference

PROJECT = Path(__file__).resolve().parents[2]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_KEYS = [
    "title", "date", "axes", "tags", "writer", "arxiv", "anchors", "version", "Title", "a-b", "_x", "k9",
    "yes", "on", "OFF", "null", "true", "y", "n", "1key", "2026", "~", "<<", "=", "key with space", "k" * 130,
    "标题", "é",
]  # fmt: skip
_VALUES = [
    "", "plain", "two words", "A Survey: Part 2", "a:b", "a: b", "ends:", "a #c", "a#b", "x  ", "a [b]", "a, b",
    "yes", "No", "on", "OFF", "y", "n", "true", "False", "0x1F", "0o17", "017", "08", "0b101", "1_000", "1:30",
    "190:20:30", "-5", "+5", "1e3", "1.5", "1.5e+3", "6.8523015e+5", "685.230_15e+03", ".inf", "-.inf", ".NaN",
    ".5", "5.", "~", "null", "Null", "NULL", "2026-09-27", "2026-09-27T07:15:43+08:00", "2026-09-27 07:15:43",
    "2026-9-7", "2026-09-27T07:15:43Z", "2026-09-27t07:15:43.5-05:30", "2026-13-45", "2026-09-27T25:00:00",
    '"quoted: x"', '"with \\" escape"', '"a, b"', '""', "'single'", "'it''s'", "''", "'a: b'", "[a, b]", "[]",
    "[ ]", "[a,,b]", "[a, b,]", "[1, yes, ~, 2026-09-27]", "[a: b]", '["q", x]', "[-x]", "[ a , b ]",
    "[a b, c d]", "{a: 1}", "{}", "{ }", '{a: "x, y"}', '{inference: "§3.3"}', "{a: b, c: d}", "{a:b}",
    "{a: }", "{a: b c}", "{yes: 1}", "&anc x", "*anc", "!!str 1", "!x y", "|", ">", "|-", "- x", "-x", "? x",
    "?x", ":x", "%x", "@x", "`x`", "推理 KV 缓存", "ＫＶ", "\t", "x\ty", "é", "a\u2028b", "a\x85b", "\ufeffx",
    "emoji 🚀", "'", '"', "=", "<<", "-", "--", "...", "---", "\\x", "x\\y", "a\rb", "\x00", "\x7f", "a\x1bb",
    "<< x", "= x", "0", "-0", "+0", "0.0", "1,000", "1__0", "_1", "0x_1F", "0b", "0x", "1:60", "2001:db8::1",
]  # fmt: skip
_SEPS = [": ", ":", ":  ", " : ", ":\t", ": \t"]
_OTHER_LINES = ["", "  ", "# comment", "  nested: 1", "- item", "---", "...", "key: value # comment", "\t"]

line = st.one_of(
    st.builds(
        lambda k, s, v: f"{k}{s}{v}", st.sampled_from(_KEYS), st.sampled_from(_SEPS), st.sampled_from(_VALUES)
    ),
    st.sampled_from(_OTHER_LINES),
    st.text(max_size=12),
)
blocks = st.lists(line, max_size=8).map(lambda lines: "\n" + "\n".join(lines) + "\n")
# Blocks most of which the shortcut takes, so that what it builds is compared often, not only what it declines.
entry = st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(_KEYS[:20]), st.sampled_from(_VALUES))
likely = st.lists(entry, min_size=1, max_size=4).map(lambda lines: "\n".join(lines) + "\n")


def assert_as_pyyaml(block: str) -> bool:
    """True when the block was read without PyYAML (and then as PyYAML reads it, and as the reference does)."""
    got = read_plain(block)
    assert repr(got) == repr(reference.read_plain(block)), block
    if got is None:
        return False
    want = yaml.load(block, Loader=LOADER)  # an error here fails the test: the shortcut accepted bad YAML
    assert repr(got) == repr(want), block  # repr: types (1, 1.0, True), order and NaN compared too
    return True


@settings(max_examples=1000, deadline=None)
@given(st.one_of(blocks, likely))
def test_accepted_blocks_load_as_pyyaml_loads_them(block: str) -> None:
    assert_as_pyyaml(block)


@pytest.mark.parametrize("value", _VALUES)
@pytest.mark.parametrize("key", ["title", "yes", "2026"])
def test_every_value_alone_loads_as_pyyaml_loads_it(key: str, value: str) -> None:
    assert_as_pyyaml(f"\n{key}: {value}\n")


@pytest.mark.parametrize(
    "block",
    [
        '\ntitle: "KV 缓存: 压缩"\nwriter: jay\n',  # a colon inside quotes
        "\ntitle: KV 缓存：压缩（综述）\n",  # full-width colon and brackets in a plain value
        "\ntitle: 한국어 노트: 요약\n",  # Korean, a colon and a space: declined
        "\ntitle: 한국어 노트 요약\ntags: [추론, 보안]\n",
        "\ntitle: Mixed 中文 and English 한국어\naxes: [inference, 风险]\n",
        "\ntitle: 'it''s'\n",  # a quote escaped by doubling: declined
        '\ntitle: "say \\"hi\\""\n',  # an escaped double quote: declined
        "\nurl: https://arxiv.org/abs/2506.01234\n",  # `:` without a space after it stays in a plain value
        "\ntime: 12:30\n",  # base 60, as YAML 1.1 reads it
        "\naxes: [a, [b]]\n",
        "\naxes: []\ntags: [ ]\nanchors: {}\n",
        "\naxes:\n  - inference\n",  # a block list: declined
        "\ufeff\ntitle: x\n",  # a byte-order mark inside the block: declined
        "\r\ntitle: x\r\nwriter: tom\r\n",  # CRLF lines: declined (PyYAML reads them)
        "\ntitle: x\ntitle: y\n",  # a repeated key: the last value, at the first one's place
        "\nyes: no\nnull: ~\n",
        "\n" + "k" * 128 + ": v\n",
        "\n" + "k" * 129 + ": v\n",
        "\ntitle: \ud800\n",  # a lone surrogate (from a note decoded with replacements): declined
        "\ntitle:\n",
        "\n\n   \n",
    ],
)
def test_edge_blocks_read_as_the_reference_and_pyyaml_read_them(block: str) -> None:
    if "\ud800" in block:
        assert read_plain(block) is None and reference.read_plain(block) is None
    else:
        assert_as_pyyaml(block)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab :,-?[]{}\"'#\n\t中한é\u3000")), max_size=30))
def test_random_syntax_reads_as_the_reference_reads_it(block: str) -> None:
    assert repr(read_plain(block)) == repr(reference.read_plain(block))


_TWO = st.integers(0, 99).map(lambda n: f"{n:02}")
iso_seconds = st.builds(
    lambda y, mo, d, h, mi, s, sign, th, tm: f"{y:04}-{mo}-{d}T{h}:{mi}:{s}{sign}{th}:{tm}",
    st.integers(0, 9999), _TWO, _TWO, _TWO, _TWO, _TWO, st.sampled_from("+-"), _TWO, _TWO,
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.one_of(iso_seconds, st.sampled_from(["2026-09-27T07:15:43+08:00", "2026-02-29T00:00:00-00:00"])))
def test_iso_timestamps_read_as_pyyaml_constructs_them(value: str) -> None:
    # The timestamp is read by datetime, not PyYAML's constructor: the same value, tzinfo and refusals.
    try:
        want: object = yaml.load(f"x: {value}", Loader=LOADER)["x"]
    except ValueError:
        want = None
    got = read_plain(f"\nx: {value}\n")
    assert repr(got["x"] if got else None) == repr(want), value


def _real_blocks() -> list[str]:
    out = []
    for folder in (
        PROJECT / "tests" / "corpus",
        PROJECT / "examples" / "root",
        PROJECT / "bench" / "quality",
    ):
        for path in sorted(folder.rglob("*.md*")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if text.startswith("---"):
                parts = text.split("\n---", 1)
                if len(parts) == 2:
                    out.append(parts[0][3:] + "\n")
    return out


def test_real_front_matter_loads_as_pyyaml_loads_it() -> None:
    blocks = _real_blocks()
    read = sum(assert_as_pyyaml(b) for b in blocks)
    assert not blocks or read >= 0.5 * len(blocks), f"only {read} of {len(blocks)} read without PyYAML"


@pytest.mark.parametrize(
    "block",
    [
        '\ntitle: "Boosting Long-Context Management"\nwriter: tom\ndate: 2026-09-27T03:48:30+08:00\n'
        "axes: [inference]\ntags: [inference, security attack]\n",
        '\ncard: 19\narxiv: "2505.00949"\ntitle: "Llama-Nemotron: Efficient Reasoning Models"\nprimary: inference\n'
        'anchors: {inference: "§3.3"}\ndate: 2026-09-27T15:07:33+08:00\n',
        "\ntitle: KV 缓存压缩周报\nversion: 3.44\ndate: 2026-09-27\n",
    ],
    ids=["note", "paper-card", "living"],
)
def test_the_common_shapes_are_read_without_pyyaml(block: str) -> None:
    # The shortcut is the parse's speed (bench/parse_speed.py): the shapes writers' tools produce must take it.
    assert assert_as_pyyaml(block)


def test_a_declined_block_still_gets_pyyaml_and_its_bounds() -> None:
    warnings: Warnings = []
    got = split_front_matter("---\nbig: &b x\nrefs: [*b, *b]\nwhen: 2026-09-27\n---\nbody\n", warnings)
    assert got.fields == {"big": "x", "refs": ["x", "x"], "when": "2026-09-27"}
    assert not warnings


@pytest.mark.timeout(60)  # a hang guard, not a figure: linear takes ~50 ms per shape
@pytest.mark.parametrize(
    "make",
    [
        lambda n: "k: a" + " " * n + "#",
        lambda n: "k:" + " " * n + "#",
        lambda n: "k: {a: b" + " " * n + '"}',
        lambda n: " " * n + "k: x",
        lambda n: "k: [a" + " " * n + "b]",
    ],
    ids=["plain", "after-colon", "mapping", "indent", "list"],
)
def test_a_million_spaces_in_a_line_are_read_or_declined_without_hanging(make: Callable[[int], str]) -> None:
    # Lines are matched whole (fullmatch): a quantifier that gave a run back would make 64k spaces minutes, and
    # a million (16x the longest line a 64 KiB front matter holds) days; read whole, it is milliseconds.
    block = make(1_000_000)
    assert_as_pyyaml(block)  # declined, or read as PyYAML reads it
