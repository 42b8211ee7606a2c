"""Whether a Markdown cell needs escaping, by the regex the briefing's rows searched with before the compiled
extension read it (`predigest_native.markdown_plain`): what `processors.render_markdown._plain` must answer."""

from __future__ import annotations

import re

from processors.inert import CONTROL

# What `processors.inert.markdown_inline` changes: `<`, `>`, `&`, `|`, `\`, `[`, str.isspace's characters but
# the space (spelt out), bidi and control characters; a double space looked for apart.
_WHITESPACE_BUT_SPACE = "\t\n\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_TO_ESCAPE = re.compile(r"[<>&|\\\[" + _WHITESPACE_BUT_SPACE + CONTROL.pattern[1:-1] + "]")


def plain(text: str) -> bool:
    return "  " not in text and _TO_ESCAPE.search(text) is None
