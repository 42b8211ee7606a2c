"""What a Markdown viewer makes of a text: the links it would follow, the images it would fetch, raw HTML."""

from __future__ import annotations

from typing import Any

import pyromark

# What an editor's preview or a Git forge understands beyond CommonMark.
VIEWER = (
    pyromark.Options.ENABLE_GFM
    | pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_FOOTNOTES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_WIKILINKS
)
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def rendered(markdown: str) -> tuple[list[str], list[str], list[str]]:
    """Link targets, image sources and raw HTML pieces of `markdown`, in order."""
    links: list[str] = []
    images: list[str] = []
    raw: list[str] = []
    for event in pyromark.events(markdown, options=VIEWER):
        start: Any = event.get("Start") if isinstance(event, dict) else None
        if isinstance(start, dict) and "Link" in start:
            links.append(start["Link"]["dest_url"])
        elif isinstance(start, dict) and "Image" in start:
            images.append(start["Image"]["dest_url"])
        elif isinstance(event, dict) and ("InlineHtml" in event or "Html" in event):
            raw.append(str(event))
        elif start == "HtmlBlock":
            raw.append("HtmlBlock")
    return links, images, raw


def only_web(links: list[str]) -> bool:
    return all(u.lower().startswith(("http://", "https://")) for u in links)
