"""The front matter most notes carry — one `key: value` per line — read to the values PyYAML builds, without it.

PyYAML's C loader still composes nodes and resolves and constructs them in Python: ~100 µs for five lines, a
sixth of a note's whole parse. Almost every front matter is a flat mapping of plain or quoted scalars and
one-line lists, whose syntax is simple enough to read with one regex per line; what each plain scalar *means*
(bool, int, float, null, timestamp or str) is still decided by PyYAML's own resolver and constructors, so
`yes`, `0x1F`, `1_000` or `2026-09-27T07:15:43+08:00` come out as PyYAML makes them. Anything else —
nesting, anchors and aliases, block scalars, comments, escapes, tabs, a colon inside a plain value — is
declined (None) and read by PyYAML within its bounds (processors.front_matter). A property test holds every
accepted block equal to `yaml.load(block, CSafeLoader)`.
"""

from __future__ import annotations

import re

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

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
_STR = "tag:yaml.org,2002:str"
_BUILT = frozenset(
    {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:null",
     "tag:yaml.org,2002:timestamp"}
)  # fmt: skip
# The loader processors.front_matter reads with: its resolver tables and constructors decide what a scalar is.
_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVERS = _LOADER.yaml_implicit_resolvers
# What may resolve a scalar by its first character, then the wildcard resolvers (SafeLoader has none), which
# PyYAML tries on every scalar after those.
_WILDCARD = tuple(_RESOLVERS.get(None, []))
_BY_FIRST = {first: (*resolvers, *_WILDCARD) for first, resolvers in _RESOLVERS.items() if first is not None}
_CONSTRUCTORS = _LOADER.yaml_constructors
_CONSTRUCTOR = SafeConstructor()  # a scalar's constructor reads only the node it is given


class _Declined(Exception):
    pass


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
            data[_scalar(m["key"])] = _value(m)
    except _Declined:
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
            raise _Declined
        return [_scalar(item) for item in items]
    if m["map"] is not None:
        return _flow_mapping(m["map"])
    plain = m["plain"]
    if plain is None:
        return None  # `key:` with nothing after it
    if ": " in plain or plain.endswith(":"):
        raise _Declined  # a mapping inside a plain value: PyYAML refuses it
    return _scalar(plain)


def _flow_mapping(text: str) -> dict[object, object]:
    if not text.strip(" "):
        return {}
    out: dict[object, object] = {}
    for entry in text.split(","):
        m = _ENTRY.fullmatch(entry.strip(" "))
        if m is None:
            raise _Declined
        out[_scalar(m["key"])] = m["dq"] if m["dq"] is not None else _scalar(m["plain"])
    return out


def _scalar(value: str) -> object:
    """A plain scalar as PyYAML resolves and constructs it (SafeLoader's implicit tags)."""
    for tag, regexp in _BY_FIRST.get(value[:1], _WILDCARD):
        if regexp.match(value):
            if tag not in _BUILT:
                raise _Declined  # `<<`, `=`: merge keys and value tags are PyYAML's to read
            try:
                return _CONSTRUCTORS[tag](_CONSTRUCTOR, ScalarNode(tag, value))
            except Exception:  # `2026-13-45`: PyYAML's path raises it, after its own syntax checks
                raise _Declined from None
    return value
