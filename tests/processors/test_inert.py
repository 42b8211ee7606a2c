"""Document text made inert: what a Markdown or HTML viewer shows of it can run nothing, fetch nothing, hide
nothing, whatever the note wrote."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.inert import Link, html_inline, markdown_inline, one_line, pieces, visible
from tests.processors.markdown_viewer import BIDI, only_web, rendered

HOSTILE = {
    "javascript": (
        "[click](javascript:alert(document.cookie))",
        "\\[click](javascript:alert(document.cookie))",
    ),
    "javascript-upper": ("[x](JaVaScRiPt:alert(1))", "\\[x](JaVaScRiPt:alert(1))"),
    "entity-spelled": ("[x](&#106;avascript:alert(1))", "\\[x](&amp;#106;avascript:alert(1))"),
    "angle-dest": ("[x](<javascript:alert(1)>)", "\\[x](&lt;javascript:alert(1)&gt;)"),
    "data": ("[d](data:text/html;base64,PHNjcmlwdD4=)", "\\[d](data:text/html;base64,PHNjcmlwdD4=)"),
    "vbscript": ("[v](vbscript:msgbox)", "\\[v](vbscript:msgbox)"),
    "file": ("[f](file:///etc/passwd)", "\\[f](file:///etc/passwd)"),
    "image-data": ("![i](data:image/png;base64,AAAA)", "!\\[i](data:image/png;base64,AAAA)"),
    "reference": ("[x][1] [1]: javascript:alert(1)", "\\[x]\\[1] \\[1]: javascript:alert(1)"),
    "definition-first": ("[1]: javascript:alert(1)", "\\[1]: javascript:alert(1)"),
    "wikilink": ("[[javascript:alert(1)]]", "\\[\\[javascript:alert(1)]]"),
    "footnote": ("[^1] and [^1]: x", "\\[^1] and \\[^1]: x"),
    "autolink": ("<javascript:alert(1)>", "&lt;javascript:alert(1)&gt;"),
    "raw-a": ('<a href="javascript:x">a</a>', '&lt;a href="javascript:x"&gt;a&lt;/a&gt;'),
    "raw-img": (
        "<img src=http://e/x.png onerror=alert(1)>",
        "&lt;img src=http://e/x.png onerror=alert(1)&gt;",
    ),
    "raw-script": ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    "escaped-bracket": ("\\[x](javascript:1)", "\\\\\\[x](javascript:1)"),
    "code-span": ("`[x](javascript:1)`", "`\\[x](javascript:1)`"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_link_to_anything_but_the_web_is_shown_as_the_text_the_note_wrote(case: str) -> None:
    written, expected = HOSTILE[case]
    out = markdown_inline(written)
    assert out == expected
    links, images, raw = rendered(out)
    assert (links, images, raw) == ([], [], [])


def test_web_links_stay_links_and_images_become_links_to_what_they_showed() -> None:
    out = markdown_inline(
        'see [the paper](https://arxiv.org/abs/2609.23130 "t") and ![beacon](http://x.example/p.png)'
    )
    assert out == ("see [the paper](https://arxiv.org/abs/2609.23130) and [beacon](http://x.example/p.png)")
    assert rendered(out) == (["https://arxiv.org/abs/2609.23130", "http://x.example/p.png"], [], [])
    # An image without alt text is a link named by its address; an image inside a link is its alt text.
    assert (
        markdown_inline("![](https://x.example/a.png)")
        == "[https://x.example/a.png](https://x.example/a.png)"
    )
    assert markdown_inline("[![logo](https://i.example/l.png)](https://site.example/)") == (
        "[logo](https://site.example/)"
    )


def test_a_web_link_cannot_smuggle_anything_through_its_address_or_text() -> None:
    out = markdown_inline(r"[a|b `c` <i> \] " '\u202e](https://x.example/p?q=1&r=<2>"|\u202e) `text')
    assert out == (
        "[a\\|b c &lt;i&gt; \\] \\u202e](https://x.example/p?q=1&amp;r=%3C2%3E%22%7C%E2%80%AE) `text"
    )
    links, images, raw = rendered("| " + out + " | y |\n|---|---|\n")
    assert (links, images, raw) == (["https://x.example/p?q=1&r=%3C2%3E%22%7C%E2%80%AE"], [], [])
    # An `!` before a kept link would make it an image again: escaped.
    out = markdown_inline(r"wow\![x](https://x.example/)")
    assert out == r"wow\\\![x](https://x.example/)"
    assert rendered(out) == (["https://x.example/"], [], [])


def test_bidi_and_control_characters_are_shown_escaped() -> None:
    assert visible("x\u202egpj.md") == "x\\u202egpj.md"
    assert visible("a\u2066b\u2069c\u200e\u200f\u061cd\x1b[31m\x00\x7f\x85") == (
        "a\\u2066b\\u2069c\\u200e\\u200f\\u061cd\\x1b[31m\\x00\\x7f\\x85"
    )
    assert visible("tab\tand\nnewline\r") == "tab\tand\nnewline\r"  # kept: the caller decides
    assert one_line("x\n[CRITICAL] forged\r\t\u2028\u202e") == "x\\n[CRITICAL] forged\\r\\t\\u2028\\u202e"
    assert markdown_inline("x\u202egpj.md\n2609.23130\u2066") == "x\\u202egpj.md 2609.23130\\u2066"
    assert markdown_inline("[t\u202e](https://x.example/\u202e)") == "[t\\u202e](https://x.example/%E2%80%AE)"


def test_pieces_give_the_web_links_to_any_view() -> None:
    assert pieces("a [b](HTTPS://x.example/y) c ![d](javascript:1)") == [
        "a ",
        Link("b", "HTTPS://x.example/y"),
        " c ![d](javascript:1)",
    ]
    assert pieces("") == [] and pieces("no links") == ["no links"]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(markup: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    return parser.tags


def test_html_views_get_the_same_links_and_nothing_else() -> None:
    out = html_inline(
        '<script>x</script> [ok](https://x.example/?a=1&b="2") ![p](http://i.example/p.png) '
        "[no](javascript:1) \u202e"
    )
    assert _tags(out) == [
        ("a", {"href": "https://x.example/?a=1&b=%222%22", "rel": "nofollow noopener noreferrer"}),
        ("a", {"href": "http://i.example/p.png", "rel": "nofollow noopener noreferrer"}),
    ]
    assert "&lt;script&gt;x&lt;/script&gt;" in out and "[no](javascript:1) \\u202e" in out


TOKENS = [
    "[", "]", "(", ")", "!", "<", ">", "\\", "`", "*", "_", ":", " ", "\n", "|", '"', "'", "&", ";", "#",
    "^", "-", "=", "~", "javascript:", "JAVASCRIPT:", "java\tscript:", "data:", "vbscript:", "file:",
    "mailto:", "&#106;", "&#x6A;", "http://", "https://", "x.example", "www.x.com", "<img src=x>", "a",
    "\u202e", "\u2066", "\u200f", "\x1b", "\x00",
]  # fmt: skip
hostile_text = st.lists(st.sampled_from(TOKENS), max_size=30).map("".join) | st.text(max_size=40)


@settings(max_examples=400, deadline=None)
@given(hostile_text, hostile_text, hostile_text)
def test_escaped_text_never_links_but_to_the_web_and_never_shows_an_image(a: str, b: str, c: str) -> None:
    a, b, c = markdown_inline(a), markdown_inline(b), markdown_inline(c)
    # As the briefing places values: list items, after a label, in table cells, two to a line.
    document = f"# {a}\n\n- {a}\n- x：{b}（{c}）\n  - {c}\n\n| h | h |\n|---|---|\n| {a} | {b} {c} |\n\n{c}\n"
    links, images, raw = rendered(document)
    assert images == [] and raw == [] and only_web(links), document
    assert not any(ch in document for ch in BIDI)


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_escaped_html_has_no_tag_but_web_links(text: str) -> None:
    tags = _tags(html_inline(text))
    assert all(tag == "a" and only_web([attrs["href"] or ""]) for tag, attrs in tags), tags
