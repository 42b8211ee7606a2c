"""Document text made inert for display: only http(s) links, images as links, invisible controls shown.

A note's text is Markdown a writer controls. Shown to a reader it must not run a script, fetch a remote
image, or hide what it is behind right-to-left overrides. `pieces` finds the note's links with the Markdown
parser the documents are parsed with; `markdown_inline` and `html_inline` write them back for a Markdown or an
HTML view, and `one_line` keeps a log record on one line.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote

import pyromark

# Bidirectional controls (embeddings, overrides, isolates, marks, the Arabic letter mark) and the C0/C1
# control characters but tab, LF and CR: they change how text around them is shown, or show nothing at all.
_CONTROL_CLASS = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
CONTROL = re.compile(_CONTROL_CLASS)
# For one-line output (logs): line and paragraph separators, tab, LF and CR as well.
LINE_BREAKING = re.compile(_CONTROL_CLASS[:-1] + "\t\n\r\u2028\u2029]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_SPACE = re.compile(r"\s+")
# A link kept for readers: a web address with a host. Anything else (javascript:, data:, vbscript:, file:,
# mailto:, relative paths) stays the text the note wrote.
_WEB = re.compile(r"https?://[^/?#\s]", re.IGNORECASE)
# What a URL keeps as it is; the rest is percent-encoded, so it cannot end a Markdown link or an HTML
# attribute, break a table, or carry a control character (`&` is escaped per output instead).
_URL_SAFE = "/:?#@!$&*+,;=%~"
_LEAD = "x "
_LABEL_KEYS = {"Text", "Code", "InlineHtml"}  # what a link's text shows (an HTML tag in it as written)


@dataclass(frozen=True)
class Link:
    """A link a reader may follow: `url` is http(s) and percent-encoded; an image arrives as its link."""

    text: str
    url: str


Piece = str | Link


def _show(match: re.Match[str]) -> str:
    c = match.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible(text: str) -> str:
    """Bidi and control characters as visible escapes (`\\u202e`, `\\x1b`); tab, LF and CR kept."""
    return CONTROL.sub(_show, text)


def one_line(text: str) -> str:
    """`visible`, and line breaks and tabs escaped too (`\\n`, `\\r`, `\\t`, `\\u2028`): one log line."""
    return LINE_BREAKING.sub(_show, text)


def web_url(url: str) -> str | None:
    """`url` percent-encoded where it is an http(s) address with a host; None for any other scheme."""
    url = url.strip()
    return quote(url, safe=_URL_SAFE) if _WEB.match(url) else None


def pieces(text: str) -> list[Piece]:
    """The text as plain runs and the http(s) links and images in it; any other link stays its source text."""
    if "[" not in text:  # every link and image starts with one (autolinks stay text: `<` is escaped)
        return [text] if text else []
    # Parsed as the inside of one paragraph, as the text sits in a list item or a table cell: no line of it
    # can start an HTML block, a code block or a link reference definition. Same bytes, shifted by `_LEAD`.
    data = (_LEAD + text).encode("utf-8")  # pyromark's ranges are byte offsets
    parsed = _LEAD + text.replace("\n", " ").replace("\r", " ")
    out: list[Piece] = []
    at = len(_LEAD)
    depth = 0
    dest = ""
    label: list[str] = []
    events = cast("list[tuple[Any, dict[str, int]]]", pyromark.events_with_range(parsed))
    for event, span in events:
        opens = _opens(event)
        if depth == 0 and opens is not None and opens[1]:
            out.append(data[at : span["start"]].decode("utf-8"))
            depth, dest, label = 1, opens[0], []
        elif depth and opens is not None:
            depth += 1
        elif depth and isinstance(event, dict) and event.get("End") in ("Link", "Image"):
            depth -= 1
            if depth == 0:
                source = data[span["start"] : span["end"]].decode("utf-8")
                url = web_url(dest)
                out.append(Link(" ".join("".join(label).split()) or url, url) if url else source)
                at = span["end"]
        elif depth and isinstance(event, dict) and (text_of := _LABEL_KEYS & event.keys()):
            label.append(str(event[text_of.pop()]))
        elif depth and event in ("SoftBreak", "HardBreak"):
            label.append(" ")
    out.append(data[at:].decode("utf-8"))
    return _merged(out)


def _merged(out: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for p in out:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p:
            merged.append(p)
    return merged


def _opens(event: Any) -> tuple[str, bool] | None:
    """For an event opening a link or image: its destination, and whether it is kept as a link (autolinks
    `<https://…>` are not: they stay text, as they do where no `[` sends the text to the parser)."""
    if isinstance(event, dict) and isinstance(start := event.get("Start"), dict):
        target = start.get("Link") or start.get("Image")
        if isinstance(target, dict):
            return str(target.get("dest_url", "")), target.get("link_type") not in ("Autolink", "Email")
    return None


def _md_text(text: str, also: str = "") -> str:
    # `\` first, so the escapes added after it are not doubled; every `[` escaped means no link, image or
    # link reference definition can start in document text.
    text = html.escape(text, quote=False)
    for c in "\\[|" + also:
        text = text.replace(c, "\\" + c)
    return visible(text)


def markdown_inline(text: str) -> str:
    """One line of inline Markdown that shows `text` and links only to http(s); images become links.

    Whitespace runs become one space; `&`, `<`, `>` are entities (no HTML, no autolink); `\\`, `[`, `|` are
    backslash-escaped; an http(s) link is written `[text](url)`, and a `!` before it is escaped.
    """
    out: list[str] = []
    for piece in pieces(_SPACE.sub(" ", text)):
        if isinstance(piece, Link):
            if out and out[-1].endswith("!"):
                out[-1] = out[-1][:-1] + "\\!"  # `![` would make it an image again
            out.append(f"[{_md_text(piece.text, ']`')}]({piece.url.replace('&', '&amp;')})")
        else:
            out.append(_md_text(piece))
    return "".join(out)


def html_inline(text: str) -> str:
    """HTML text for `text`: everything escaped, http(s) links as `<a rel="nofollow noopener noreferrer">`."""
    out: list[str] = []
    for piece in pieces(text):
        if isinstance(piece, Link):
            out.append(
                f'<a href="{html.escape(piece.url)}" rel="nofollow noopener noreferrer">'
                f"{visible(html.escape(piece.text))}</a>"
            )
        else:
            out.append(visible(html.escape(piece)))
    return "".join(out)
