"""The compiled pass over a note equals its plain Python reference, on random text and on every real note.

`processors.structure.read_note` (predigest_native, Rust) must return what tests/processors/reference/ computes
in Python — structure, sections, arXiv ids and invalid mentions, normalised-text hash, MinHash signature, index
terms, the texts that may title an id and the (id, title) pairs judged from them — or a briefing would change
with the swap. Random text mixes Chinese, Korean, English, digits, Markdown
syntax, arXiv-like strings, emoji and compatibility characters; real text is tests/corpus and examples/root,
whole and in random slices.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.id_titles import stated_pairs
from processors.structure import parse_structure, read_note
from processors.terms import read_terms
from processors.tokens import normalise
from tests.processors.reference import id_titles as reference_titles
from tests.processors.reference import reading as reference
from tests.processors.reference import text as reference_text
from tests.processors.reference.structure_walk import parse_structure as reference_structure

PROJECT = Path(__file__).resolve().parents[2]
REAL = sorted(
    p
    for folder in (PROJECT / "tests" / "corpus", PROJECT / "examples" / "root")
    for p in folder.rglob("*.md")
)
KEEP = frozenset({"kv", "vllm", "推理", "缓存", "캐시", "2509", "attention", "长上下文"})

# Pieces a note is made of: words of each script, Markdown syntax at line starts and inline, ids and links.
_PIECES = [
    "KV 缓存压缩", "长上下文推理", "推理吞吐", "注意力", "키-값 캐시", "추론 속도", "논문", "vLLM", "Attention",
    "throughput", "the", "and", "SnapKV", "LLM", "0.6", "3.8×", "12 ms", "TTFT", "ＫＶ　Ｃａｃｈｅ", "ﬁne", "Å",
    "e\u0301", "①", "½", "™", "é", "ß", "İ", "ǅ", "Σσς",
    "\n", "\n\n", "\n# ", "\n## ", "\n### ", "\n#### ", "\n- ", "\n  - ", "\n* ", "\n1. ", "\n2) ", "\n> ",
    "\n>> ", "\n---\n", "\n===\n", "\n```\n", "\n```python\n", "\n~~~\n", "\n    ", "\n| a | b |\n|---|---|\n| ",
    " | ", "|", "**", "*", "__", "_", "`", "``", "~~", "[", "]", "(", ")", "![", "](", "<", ">", "<br>",
    "<details>", "</details>", "<img src=x>", "&amp;", "&#x4e2d;", "\\", "\t", "  \n", "\r\n", "\r",
    "- [ ] ", "- [x] ", "[^1]", "[^1]: note", "$x$", "$$\nx\n$$",
    "[link](https://example.org/a_b)", "[Back](#top)", "[返回顶部](#toc)", "[맨 위로](#top)", "(©️back👆🏻)",
    "<https://arxiv.org/abs/2409.12345>", "https://arxiv.org/pdf/2509.08315v2", "arXiv:2509.08315",
    "arXiv: 2609.08315", "arxiv 2410.1234", "2401.00001v3", "2413.12345", "0704.0001", "9912.12345",
    "hep-th/9901001", "math.AG/0601001", "cs/0703001v2", "1.2345", "192.168.1.1", "v0.30.0", "2409.123456",
    "§3.3", "2.4 ", "3. ", "1️⃣", "#️⃣", "📒", "🚀", "👩‍💻", "©️", "®", "\u200d", "\ufe0f", "\u00a0", "\u3000",
    "\u200b", "\u2028", "\x00", "\x0b", "\x0c", "（压缩）", "【返回】", "「引用」", "，", "。", "、", "——", "…",
    # What titles an id (processors.id_titles): title lines, title columns, leads, named papers, card links.
    "**原文标题：** ", "Title: ", "TİTLE： ", "paper title:", "**Title**", "标题", "| Title | arXiv |\n|---|---|\n| ",
    "| 论文 | 链接 |\n|---|---|\n| ", "| 📄 Paper Titles: | id |\n|--|--|\n| ", "| name | x |\n|-|-|\n|",
    "\n### 2.1 InferenceBench\n\narXiv:2607.20468 提出", "\n## Notes\n\n来源：https://arxiv.org/abs/2509.08315 ",
    "[SnapKV: LLM Knows What You Want](https://arxiv.org/abs/2404.14469)", "**SnapKV: Efficient KV Cache** ",
    "Detokenization Leaks（arXiv 2609.06674）：", "[pdf](https://arxiv.org/pdf/2410.01234)", " Yuhong Li, Tri Dao ",
]  # fmt: skip
pieces = st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=60).map("".join)
# Lone surrogates: front matter's escapes can put them in a title, and a str may carry them anywhere.
surrogates = st.lists(st.sampled_from(_PIECES) | st.characters(categories=["Cs"]), max_size=20).map("".join)
any_text = st.one_of(pieces, st.text(max_size=300), surrogates)
titles = st.one_of(
    st.sampled_from(["", "KV 缓存", "vLLM attention 推理", "키-값 캐시 2509"]),
    st.text(max_size=30),
    surrogates,
)
keeps = st.frozensets(st.sampled_from(sorted(KEEP)) | st.text(min_size=1, max_size=4), max_size=6)


def assert_equal_reading(body: str, title: str = "", keep: frozenset[str] = KEEP) -> None:
    got, want = read_note(body), reference.read_note(body)
    assert got.text_hash == want.text_hash, "text_hash"
    assert got.signature == want.signature, "signature"
    assert got.arxiv_ids == want.arxiv_ids, "arxiv_ids"
    assert got.invalid_ids == want.invalid_ids, "invalid_ids"
    assert got.terms(title, keep) == want.terms(title, keep), "terms"
    assert got.sections == want.sections, "sections"
    assert got.title_scan == want.title_scan, "title_scan"
    for path, kind in (
        ("inbox/jay/2026-09-27-0930-x.md", "inbox"),
        ("paper_cards/003-2404-14469.md", "paper_card"),
    ):
        ids = got.arxiv_ids
        pairs = stated_pairs(path, kind, title, ids, got)
        assert pairs == reference_titles.stated_pairs(path, kind, title, ids, want.structure), "stated_pairs"
    assert got.structure == want.structure, "structure"
    assert_equal_terms(body)
    assert_equal_terms(title)


def assert_equal_terms(text: str) -> None:
    """A text's index-term counts, in the same order (a TF-IDF vector sums them in it), and its normalised form
    when it is handed back (no URL, no lone surrogate)."""
    (words, cjk), norm = read_terms(text)
    want = reference_text.term_parts(text)
    assert (list(words.items()), list(cjk.items())) == (list(want.words.items()), list(want.cjk.items()))
    if norm is None:
        assert "://" in text or any("\ud800" <= c <= "\udfff" for c in text), "norm left out"
    else:
        assert norm == normalise(text), "norm"


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(any_text, titles, keeps)
def test_random_text_reads_the_same(body: str, title: str, keep: frozenset[str]) -> None:
    assert_equal_reading(body, title, keep)


# Characters that NFKC and lower case treat specially, next to each other: full-width forms before combining
# marks, jamo that compose into syllables, precomposed letters that compose further, capital sigma.
_NORMALISING = "aeAE1 ,.\n中文缓存ＫＶ，（）：！？　\u0301\u0308\u0327\u0323âêÅﬁ½①™\u1100\u1161\u11a8가각ΣσςİẞǅＡＢ\u3002\u3001…\u00a0"


@SETTINGS
@given(st.text(alphabet=_NORMALISING, max_size=40), st.text(alphabet=_NORMALISING, max_size=8))
def test_text_that_normalises_reads_the_same(body: str, title: str) -> None:
    # The pass normalises in stretches (native/src/text.rs): any cut between them must not show.
    assert_equal_reading(body, title)


# Characters about the bytes the pass reads without decoding: ideographs by their first two UTF-8 bytes
# (U+4E00…U+9FFF; U+4000…U+4DFF share the first byte and hold the hexagram symbols, no CJK), ASCII and block
# text eight bytes at a time (white space of each kind, single and double spaces at any offset).
_FAST_PATHS = "ab Z1\n\t*#-中文\u4e00\u9fff\u4dbf\u4dc0\u4dff\u4000\u3400\ua000\u3002\u201c，Ｋ\u0301\u3000\u00a0\u2028ΣÅ"


@SETTINGS
@given(st.text(alphabet=_FAST_PATHS, max_size=80), st.text(alphabet=_FAST_PATHS, max_size=12))
def test_text_read_a_word_at_a_time_reads_the_same(body: str, title: str) -> None:
    assert_equal_reading(body, title)


# A double space where the eight-byte skip stops or ends (a heading read "abcdefg  h" when it stopped one late).
@pytest.mark.parametrize(
    "body", ["abcdefg  h", "# abcdefg  h", "abcdef  gh", "- abcdefgh  i\n", "abcdefg \u00a0h"]
)
def test_a_double_space_at_the_word_boundary_reads_the_same(body: str) -> None:
    assert_equal_reading(body, "")


# ASCII words read sixteen bytes at a time: words of every length to past 32 bytes, against each byte that
# borders the letters and digits in ASCII (`/`, `:`, `@`, `[`, `` ` ``, `{`) and against characters past ASCII.
_ASCII_WORD = st.text(alphabet="azAZ09bqY5", min_size=1, max_size=40)
_WORD_STOPS = st.sampled_from(
    ["/", ":", "@", "[", "`", "{", " ", "\n", "_", "-", "é", "中", "Ｋ", "\u00a0", "ǅ"]
)
ascii_words = st.lists(_ASCII_WORD | _WORD_STOPS, max_size=30).map("".join)


@SETTINGS
@given(ascii_words, ascii_words)
def test_long_ascii_words_read_the_same(body: str, title: str) -> None:
    assert_equal_reading(body, title)


# Lower case is ASCII's alone unless the NFKC pass meets another character with a case: cased letters of other
# scripts alone, next to ideographs, full-width forms and combining marks, or only after NFKC (`ǅ`, `™`, `Ⅻ`).
_CASED = "Ä Жж Ωω Σ ǅ ẞ İ Ⅻ ™ ﬁ Ａ ａ Å"
cased_text = st.lists(
    st.sampled_from(_CASED.split())
    | st.sampled_from(["中文", "缓存", "，", "（", "KV", " ", "\u0301", "가", "é"]),
    max_size=30,
).map("".join)


@SETTINGS
@given(cased_text, cased_text)
def test_text_with_cased_letters_of_other_scripts_reads_the_same(body: str, title: str) -> None:
    assert_equal_reading(body, title)


# Mixed text read sixteen bytes at a time (NFKC passes ASCII and U+4000…U+9FFF as one run; block text is
# skipped to the first byte that may start white space): runs of every length against each kind of stop — the
# lead bytes bordering the passed ones (0xe4…0xe9: `䷀` U+4DC0, U+4E00, U+9FFF; 0xe3: `㐀`, `、`, U+3000;
# 0xea: `가`; 0xc2: `©`, U+00A0), white space of each kind, single and double spaces — in blocks of Markdown.
_RUN = st.text(alphabet="azAZ09 ", min_size=1, max_size=40)
_RUN_STOPS = st.sampled_from(
    [
        "中文", "\u4e00", "\u9fff", "\u4dff", "\u4dc0", "\u3400", "、", "。", "，", "Ｋ", "é", "©", "가", "캐시",
        " ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\u2003", "\u1680", "\u2060", "\u0301", "e\u0301",
        "\n\n", "\n- ", "\n# ", "**", "[a](b)", "😀",
    ]
)  # fmt: skip
mixed_runs = st.lists(_RUN | _RUN_STOPS | st.text(alphabet="中文缓存压缩推理", max_size=20), max_size=40).map(
    "".join
)


@SETTINGS
@given(mixed_runs, st.text(alphabet="中a ，", max_size=12))
def test_mixed_runs_read_sixteen_bytes_at_a_time_read_the_same(body: str, title: str) -> None:
    assert_equal_reading(body, title)


# Characters NFKC and lower case answer without their tables: `×` `÷` `–` `—` curly quotes `、` `。` (their own
# NFKC, caseless), general punctuation and the full-width forms up to `＠` (caseless, not their own NFKC), beside
# those that still ask: `Ａ` (U+FF21, the first full-width capital), `［`, `ａ`, combining marks, a capital sigma.
_PUNCTUATION = (
    "×÷–—‘’“”、。！＂＠［｀｛～ＡＺａｚ\u2010\u2011\u2024\u2026\u2030\u205f\u2060\u0301\u0338ΣAz 中"
)


@SETTINGS
@given(st.text(alphabet=_PUNCTUATION, max_size=60), st.text(alphabet=_PUNCTUATION, max_size=10))
def test_punctuation_answered_without_tables_reads_the_same(body: str, title: str) -> None:
    assert_equal_reading(body, title)


# Invalid mentions are looked for from each `x` or `X`, two bytes back: `arxiv` in any case (`İ` and `ı` match
# its `i`), next to other `a`, `r` and `x`, at the text's start, overlapping, announcing ids valid or not.
_ARXIV = st.sampled_from(
    ["arxiv", "arXiv", "ARXIV", "ArXiv", "arxİv", "arxıv", "aarxiv", "xarxiv", "arxarxiv"]
)
_ANNOUNCE = st.sampled_from([":", " ", ": ", "\u3000", "", ".org/abs/", ".org/pdf/", ".ORG/html/", ".org/"])
_GROUP = st.sampled_from(["2401.12345", "2413.1", "9912.1", "123.45678v2", "2401.1234v", "12.3", "2401"])
_NOISE = st.sampled_from(["a", "r", "x", "X", "ax", "Rx", " ", ".", "中", "2401.12345", "v2"])
mentions = st.lists(st.tuples(_ARXIV, _ANNOUNCE, _GROUP).map("".join) | _NOISE, max_size=20).map("".join)


@SETTINGS
@given(mentions)
def test_arxiv_mentions_found_from_each_x_read_the_same(body: str) -> None:
    assert_equal_reading(body, "")


# Block texts are given up whole to their block (moved, and kept as they are when already collapsed): each kind
# of block, in each script, with and without white space to collapse.
MARKDOWN_EDGES = {
    "nested lists": "- 缓存 KV\n  - 压缩  two  spaces\n    - 캐시 deep [link](https://arxiv.org/abs/2509.08315)\n- last\n",
    "setext headings": "标题 Title\n=====\n\n正文 text\n\nSub 副标题\n-----\n\n- item\n",
    "code fences": "# 代码\n\n```python\nx  =  1\n```\n\n~~~\n中文\n~~~\n\n    indented  code\n\nafter 之后\n",
    "html blocks": '<details>\n<summary>摘要  KV</summary>\n<img src="a.png">\n</details>\n\n<p>段落 &amp; text</p>\n',
    "tables": (
        "| Title | arXiv |\n|---|---|\n| **SnapKV**  压缩 | [2404.14469](https://arxiv.org/abs/2404.14469) |\n"
        "|  | 2509.08315 |\n| 캐시\u3000cache | x |\n"
    ),
    "front matter": "---\ntitle: 标题\ntags: [kv]\n---\n\n# 正文\n\n**Lead:** text  here\n",
    "task lists": "- [x] 完成 done\n- [ ] 未完成  todo\n\n> 引用 quote\n> - in quote\n",
    "heading back links": "## 2.1 标题 [返回](#top)\n\n段落。\n\n### [Back](#toc)\n\ntext\n",
    "white space kinds": "a\u00a0b\u3000c\u2028d  e\t\tf\n\n\u3000lead and trail\u3000\n",
}


@pytest.mark.parametrize("name", sorted(MARKDOWN_EDGES))
def test_markdown_edge_cases_read_the_same(name: str) -> None:
    assert_equal_reading(MARKDOWN_EDGES[name], "标题")


def _fields(reading: object) -> tuple[object, ...]:
    names = ("text_hash", "signature", "arxiv_ids", "invalid_ids", "sections", "title_scan", "structure")
    return (*(getattr(reading, name) for name in names), reading.terms("标题 vLLM", KEEP))  # type: ignore[attr-defined]


@SETTINGS
@given(any_text)
def test_a_body_read_from_its_file_bytes_reads_the_same(body: str) -> None:
    # The parse stage hands the pass the body's UTF-8 as the file holds it, sparing an encode.
    try:
        data = body.encode()
    except UnicodeEncodeError:
        return  # lone surrogates: no file's UTF-8 holds them, and the parse stage passes no bytes then
    assert _fields(read_note(body, data)) == _fields(read_note(body))
    assert _fields(read_note(body, data + b"x")) == _fields(read_note(body)), (
        "bytes of another length are ignored"
    )


@SETTINGS
@given(pieces)
def test_random_markdown_has_the_same_structure(body: str) -> None:
    assert parse_structure(body) == reference_structure(body)


# Characters and line feeds are counted sixteen bytes at a time, in byte lanes summed every 255 blocks: sections
# and blocks far into long notes (past 4 080 bytes, where a lane would wrap) of every width of character.
_WIDE = st.sampled_from(
    ["a", "é", "中", "😀", " ", "\n", "\r\n", "\n\n## 节 ", "\n- ", "\n\n| a |\n|---|\n| 中 |\n"]
)
long_bodies = st.lists(
    st.tuples(_WIDE, st.integers(1, 400)).map(lambda t: t[0] * t[1]), min_size=20, max_size=60
)


# A hang guard: 7-13 s alone, 23 s beside a busy box (the suite's 30 s went under CI's load).
@pytest.mark.timeout(120)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_bodies.map("".join))
def test_long_notes_of_every_width_have_the_same_offsets_and_lines(body: str) -> None:
    assert parse_structure(body) == reference_structure(body)
    assert_equal_reading(body)
    assert _fields(read_note(body, body.encode())) == _fields(read_note(body))


def test_bytes_as_long_as_the_body_has_characters_are_not_taken_for_it() -> None:
    # Given bytes are the body's only when they hold as many characters as it, not as many bytes.
    body = "x" * 6000
    assert _fields(read_note(body, ("中" * 2000).encode())) == _fields(read_note(body))


@cache
def _real(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(PROJECT)))
def test_every_real_note_reads_the_same(path: Path) -> None:
    text = _real(path)
    assert_equal_reading(text, path.stem)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL), st.floats(0, 1), st.floats(0, 1))
def test_slices_of_real_notes_read_the_same(path: Path, a: float, b: float) -> None:
    # A cut anywhere: inside a table, a code fence, a link, a multi-byte character's neighbourhood.
    text = _real(path)
    lo, hi = sorted((int(a * len(text)), int(b * len(text))))
    assert_equal_reading(text[lo : min(hi, lo + 4000)])


@pytest.mark.parametrize(
    "body",
    [
        "",
        "\ud800 lone surrogate 缓存\udfff",
        "见上",
        "# 标题\n\n正文 KV 缓存压缩 2509.08315 https://arxiv.org/abs/2509.08315v2\n",
        "캐시 " * 50,
        "token " + " ".join(f"t{i}" for i in range(300)),
    ],
    ids=["empty", "surrogates", "tiny", "zh-note", "ko-repeated", "many-tokens"],
)
def test_edge_cases_read_the_same(body: str) -> None:
    assert_equal_reading(body, "标题")


def _ident(n: int, yymm: str) -> str:
    return f"{yymm}.{10000 + n:05d}"


HOSTILE = {
    "10k ids on a line": " ".join(f"arXiv:{_ident(n, '2608')}" for n in range(10_000)),
    "5k id sections": "\n".join(
        f"## {_ident(n, '2609')} KV 压缩 {n}\n- vLLM 吞吐 {n % 9}.{n % 7}×\n" for n in range(5000)
    ),
    "40-deep quotes": "\n".join(">" * (i % 40 + 1) + f" vLLM 推理 {i}" for i in range(20_000)),
    "50k nested quotes": "# 引用\n\n" + "> " * 50_000 + "KV cache 3.8×\n",
    "80k blank lines": "# a\n" + "\n" * 80_000 + "x",
    "runs of markup": "*" * 20_000 + " a " + "|" * 20_000 + "\n" + "-" * 20_000 + "\n" + "[" * 20_000,
    "spaces before an id": "arXiv" + " " * 20_000 + "2401.12345 " + "2401." + " " * 20_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_notes_read_the_same(name: str) -> None:
    # The red team's notes (issue 15): the compiled pass must agree on them too, not only stay fast.
    assert_equal_reading(HOSTILE[name], name)
