"""The reference of the flat front matter reading: one regex per line, PyYAML's resolver for plain scalars.

The product reads the syntax in the compiled pass (`processors.plain_front_matter.read_plain`, with the same
resolver for plain scalars); tests/processors/test_plain_front_matter.py holds the two equal, and both equal to
`yaml.load(block, CSafeLoader)` on every block they accept. The grammar: a key, then a double-quoted string
without escapes, a single-quoted one without quotes, a one-line list or mapping, or a plain scalar that opens
with no indicator; nesting, anchors and aliases, block scalars, comments, escapes, tabs, a colon inside a
plain value are declined (None).
"""

from __future__ import annotations

import re

from processors.plain_front_matter import Declined, scalar

# A key, then a double-quoted string without escapes, a single-quoted one without quotes, a one-line list, or
# a plain scalar that opens with no indicator, matched against a line without its trailing spaces (so that
# no quantifier gives back a run of them: a line of 60k spaces stays linear). `#` is refused outright (a
# comment, or text a comment rule could split), as are tabs (by _PRINTABLE).
_LINE = re.compile(
    r"(?P<key>[A-Za-z_][A-Za-z0-9_-]{0,127}):"
    r"(?: +(?:"
    r'"(?P<dq>[^"\\]*)"'
    r"|'(?P<sq>[^']*)'"
    r"|\[(?P<seq>[^\[\]{}#\"'&*!|>%@`:\\]*)\]"
    r"|\{(?P<map>[^\[\]{}#'&*!|>%@`\\]*)\}"
    r"|(?P<plain>[^ \-?:,\[\]{}#&*!|>'\"%@`\\][^#]*)"
    r"))?"
)
# Flow items of a one-line list: plain scalars that open with no indicator (the rest of it _LINE checked).
_ITEM = re.compile(r"[^ \-?,]")
# Entries of a one-line mapping (`anchors: {inference: "§3.3"}`), stripped of spaces: a key, then a plain
# scalar without `:` or a double-quoted string without escapes or commas (one with a comma is split apart
# and fails to match).
_ENTRY = re.compile(
    r'(?P<key>[A-Za-z_][A-Za-z0-9_-]{0,127}): +(?:"(?P<dq>[^"]*)"|(?P<plain>[^ \-?:"][^:"]*))'
)
# Characters YAML reads the same in every context: printable, no tab, CR, NEL, BOM or line/paragraph separator.
_PRINTABLE = re.compile(
    r"[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
)


def read_plain(block: str) -> dict[object, object] | None:
    """The mapping PyYAML would load from `block`, when it is one `key: value` per line; None otherwise."""
    if not _PRINTABLE.fullmatch(block):
        return None
    data: dict[object, object] = {}
    try:
        for line in block.split("\n"):
            if not line.strip(" "):
                continue
            m = _LINE.fullmatch(line.rstrip(" "))
            if m is None:
                return None
            data[scalar(m["key"])] = _value(m)
    except Declined:
        return None
    return data or None  # an empty block is PyYAML's None: its own path says so


def _value(m: re.Match[str]) -> object:
    if m["dq"] is not None:
        return m["dq"]
    if m["sq"] is not None:
        return m["sq"]
    if m["seq"] is not None:
        items = [item.strip(" ") for item in m["seq"].split(",")]
        if items == [""]:
            return []
        if not all(item and _ITEM.match(item) for item in items):
            raise Declined
        return [scalar(item) for item in items]
    if m["map"] is not None:
        return _flow_mapping(m["map"])
    plain = m["plain"]
    if plain is None:
        return None  # `key:` with nothing after it
    if ": " in plain or plain.endswith(":"):
        raise Declined  # a mapping inside a plain value: PyYAML refuses it
    return scalar(plain)


def _flow_mapping(text: str) -> dict[object, object]:
    if not text.strip(" "):
        return {}
    out: dict[object, object] = {}
    for entry in text.split(","):
        m = _ENTRY.fullmatch(entry.strip(" "))
        if m is None:
            raise Declined
        out[scalar(m["key"])] = m["dq"] if m["dq"] is not None else scalar(m["plain"])
    return out
