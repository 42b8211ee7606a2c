"""The Markdown a reader gets: the example's sections in order, both languages, nothing injectable."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors import render_markdown as render_markdown_module
from processors.inert import CONTROL, markdown_inline
from processors.models import NoIncrementSource, Rejection
from processors.render_markdown import LIST_ALL, LIST_FIRST, esc, markdown_pieces, render_markdown
from tests.processors.markdown_viewer import BIDI, only_web, rendered
from tests.processors.notes import SH, brief, example_documents, note

GOLDEN = Path(__file__).parent / "golden"
ZH_HEADINGS = [
    "## 状态摘要",
    "## 一、检查过的来源清单",
    "## 二、增量条目",
    "## 三、值得警惕的矛盾或待核实说法",
    "## 四、可引用 arXiv 号列表",
    "## 五、检查过的来源汇总（可审计）",
    "## 六、本次无显著新增量的来源说明",
    "## 七、建议今晚 E2 活文档更新优先级",
]


def _positions(text: str, headings: list[str]) -> list[int]:
    return [text.index(h) for h in headings]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_example_root_renders_exactly_as_the_golden_file(lang: str, update_golden: bool) -> None:
    text = render_markdown(brief(example_documents(), lang=lang), lang=lang, zone=SH)  # type: ignore[arg-type]
    golden = GOLDEN / f"example-{lang}.md"
    if update_golden:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"run pytest --update-golden and review {golden}"


@pytest.mark.parametrize("at_once", [1, 2])
def test_sources_listed_a_slice_at_a_time_render_as_the_golden_file(
    at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 一's rows and 五's items are joined a slice of sources at a time (a 100k window's are not held whole).
    monkeypatch.setattr(render_markdown_module, "SOURCES_AT_ONCE", at_once)
    b = brief(example_documents())
    assert len(b.sources) > at_once
    assert "".join(markdown_pieces(b, zone=SH)) == (GOLDEN / "example-zh.md").read_text(encoding="utf-8")


def test_zh_has_every_section_of_the_example_in_its_order() -> None:
    text = render_markdown(brief(example_documents()), zone=SH)
    assert text.startswith("# inference · E1 预消化简报(2026-09-27)\n")
    positions = _positions(text, ZH_HEADINGS)
    assert positions == sorted(positions)
    assert "本报告由 predigest 自动生成" in text.splitlines()[-1]


def test_en_gives_the_same_briefing_in_english() -> None:
    zh = brief(example_documents())
    en = brief(example_documents(), lang="en")
    assert [i.title for i in zh.increments] == [i.title for i in en.increments]
    text = render_markdown(en, lang="en", zone=SH)
    assert "## 2. Increments" in text and "## 7. Recommended E2 update priorities tonight" in text
    assert "very high ⭐⭐⭐⭐⭐" in text
    assert "版本号差异" not in text and "version mismatch" in text


def test_document_text_cannot_inject_html_or_break_a_table() -> None:
    hostile = note(
        "inbox/jay/2026-09-27-1000-x.md",
        "# t\n\n## <script>x</script>a|b vLLM 推理\n"
        "arXiv:2609.23130 vLLM KV cache 推理 | 吞吐 3.8×\n- <img src=x onerror=alert(1)> 命中率 92.2% |\n",
    )
    text = render_markdown(brief([hostile]), zone=SH)
    assert "<script>" not in text and "<img" not in text
    # Key points are the parsed text: inline HTML never reaches them, a pipe in them is escaped.
    assert "  - 命中率 92.2%\n" in text and "vLLM KV cache 推理 \\| 吞吐 3.8×" in text
    assert "a\\|b vLLM 推理" in text  # headings lose their tags at parse time; the pipe is escaped here
    for line in text.splitlines():
        if line.startswith("| inbox/jay"):
            assert line.count(" | ") == 2  # three cells, however many pipes the title had


RLO, LRI, PDI = "\u202e", "\u2066", "\u2069"
HOSTILE_PATH = f"inbox/jay/2026-09-27-1000-invoice{RLO}fdp.md"  # shows as invoicedm.pdf
HOSTILE_NOTE = (
    f"# vLLM 推理 {LRI}serving{PDI} report{RLO}fdp.exe [click](javascript:alert(document.cookie))\n\n"
    "- vLLM KV cache 推理 [click](javascript:alert(document.cookie)) 吞吐 3.8×\n"
    "- vLLM serving ![beacon](http://evil.example/p.png) 命中率 92.2%\n"
    "- vLLM 推理 [payload](data:text/html;base64,PHNjcmlwdD4=) and [v](vbscript:msgbox) TTFT 12 ms\n"
    '- vLLM 推理 <a href="javascript:x">a</a> <img src=http://evil.example/x.png> <script>alert(1)</script>\n'
    "- vLLM 推理 see [the vLLM docs](https://docs.vllm.ai/en/latest/) on speculative decoding\n"
    f"- vLLM 推理 arXiv:2609.23130{RLO} KV cache 命中率\n"
)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_hostile_note_briefs_to_inert_markdown(lang: str) -> None:
    b = brief([note(HOSTILE_PATH, HOSTILE_NOTE)], lang=lang)  # type: ignore[arg-type]
    text = render_markdown(b, lang=lang, zone=SH)  # type: ignore[arg-type]
    links, images, raw = rendered(text)
    # A viewer fetches nothing, runs nothing and follows only web links. Key points are the parsed text of the
    # note (a link is its text), so the payloads are words: nothing of them is clickable.
    assert images == [] and raw == [] and only_web(links), links
    assert (
        "  - vLLM KV cache 推理 click 吞吐 3.8×\n" in text
        and "  - vLLM 推理 payload and v TTFT 12 ms\n" in text
    )
    assert not any(f"]({scheme}" in text for scheme in ("javascript:", "data:", "vbscript:"))
    assert "<img" not in text and "<script" not in text and "<a " not in text
    # No bidi control reaches the reader: each is shown, in the path, the title and the id line.
    assert not any(c in text for c in BIDI)
    assert "invoice\\u202efdp.md" in text
    assert "\\u2066serving\\u2069 report\\u202efdp.exe" in text
    assert "2609.23130\\u202e KV cache" in text
    # The JSON is data: its points are the same parsed text, its paths and titles as the note wrote them.
    assert any(p == "vLLM KV cache 推理 click 吞吐 3.8×" for i in b.increments for p in i.points)
    assert RLO in b.sources[0].path


def test_esc_flattens_newlines_and_escapes_pipes_and_angle_brackets() -> None:
    assert esc("a|b\n<c> & d") == "a\\|b &lt;c&gt; &amp; d"


def test_an_empty_window_says_so_and_keeps_every_section() -> None:
    text = render_markdown(brief([]), zone=SH)
    assert "本窗口没有任何来源" in text
    assert _positions(text, ZH_HEADINGS) == sorted(_positions(text, ZH_HEADINGS))


@given(
    st.text(alphabet=st.sampled_from(list("ab |<>&[]()!\\\n\t\r\u3000\xa0\u2028\u202e\x1b推")), max_size=40)
    | st.text(max_size=40)
)
def test_escaping_skips_only_cells_it_would_not_change(text: str) -> None:
    # esc returns plain cells as they are; what it returns must be what the full escaping gives.
    assert esc(text) == markdown_inline(text)


def test_every_whitespace_and_control_character_is_escaped_as_the_full_escaping_does() -> None:
    # The quick check that lets a plain cell through names these characters one by one: none may be missed.
    chars = [chr(c) for c in range(0x110000) if chr(c).isspace() or CONTROL.match(chr(c))]
    for text in (t for c in chars for t in (c, f"a{c}b", f"推{c}{c}")):
        assert esc(text) == markdown_inline(text), repr(text)


def _six(text: str) -> str:
    start = text.index("六、") if "六、" in text else text.index("6. Sources")
    return text[start : text.index("\n## ", start)]


def test_six_groups_sources_by_reason_with_counts_and_lists_a_long_group_in_part() -> None:
    low = [
        NoIncrementSource(path=f"inbox/tom/2026-09-27-d{i:03}.md", reason="相关度低", code="low")
        for i in range(30)
    ]
    dup = [
        NoIncrementSource(path=f"inbox/jay/2026-09-27-r{i:02}.md", reason="重复", code="duplicate")
        for i in range(LIST_ALL)
    ]
    adjacent = NoIncrementSource(path="paper_cards/1432-2609-19499.md", reason="邻接", code="adjacent")
    b = brief([]).model_copy(update={"no_increment_sources": [*low[:10], adjacent, *dup, *low[10:]]})
    six = _six(render_markdown(b, zone=SH))
    # Groups in the order of the reason codes, each with its count.
    assert [line[2:].split("：")[0] for line in six.splitlines() if line.startswith("- ")] == [
        "主要属于其他主轴（邻接）",
        "相关度低",
        "重复",
    ]
    assert "- 相关度低：30 个（列出前 5 个；其余 25 个见 JSON 的 no_increment_sources）" in six
    assert [p for p in (n.path for n in low) if p in six] == [n.path for n in low[:LIST_FIRST]]
    assert f"- 重复：{LIST_ALL} 个\n" in six and all(n.path in six for n in dup)  # up to LIST_ALL: all listed
    # The JSON keeps every one.
    assert len(b.no_increment_sources) == 30 + LIST_ALL + 1
    en = _six(render_markdown(b, lang="en", zone=SH))
    assert (
        "- low relevance: 30 (the first 5 listed; the other 25 are in the JSON's no_increment_sources)" in en
    )


def test_a_rejected_file_is_shown_by_its_code_in_the_briefing_language() -> None:
    rejected = [
        Rejection(
            path="inbox/jay/2026-09-27-bin.md",
            reason="inbox/jay/2026-09-27-bin.md: NUL",
            reason_code="binary",
        ),
        Rejection(path="inbox/jay/2026-09-27-old.md", reason="recorded before codes"),  # no code: the message
    ]
    b = brief([]).model_copy(update={"rejected": rejected})
    zh, en = render_markdown(b, zone=SH), render_markdown(b, lang="en", zone=SH)
    assert "- inbox/jay/2026-09-27-bin.md（拒收：二进制文件（含 NUL 字节））" in zh
    assert "- inbox/jay/2026-09-27-bin.md (rejected: binary file (NUL bytes))" in en
    assert "- inbox/jay/2026-09-27-old.md (rejected: recorded before codes)" in en


def test_a_window_of_many_ids_names_a_few_in_the_summary_and_lists_them_all_in_4() -> None:
    ids = [f"2609.{30000 + i}" for i in range(40)]
    digest = note(
        "inbox/tom/2026-09-27-0900-daily.md",
        "# vLLM 推理 daily\n\n"
        + "".join(f"- vLLM KV cache 推理 paper arXiv:{i} 吞吐 1.{n}×\n" for n, i in enumerate(ids)),
    )
    text = render_markdown(brief([digest]), zone=SH)
    summary = next(line for line in text.splitlines() if line.startswith("- 涉及 arXiv 号"))
    assert summary.count("2609.") == 12 and "… 另 28 个见四" in summary
    assert sum(1 for line in text.splitlines() if line.startswith("| 2609.3")) == 40
