"""The front matter most notes carry — one `key: value` per line — read to the values PyYAML builds, without it.

PyYAML's C loader still composes nodes and resolves and constructs them in Python: ~100 µs for five lines, a
sixth of a note's whole parse. Almost every front matter is a flat mapping of plain or quoted scalars and
one-line lists or mappings, whose syntax the compiled pass reads (predigest_native.PlainFrontMatter, native/
src/front_matter.rs; ~2 µs where one regex per line took ~20); what each plain scalar *means* (bool, int,
float, null, timestamp or str) is still decided by PyYAML's own resolver and constructors (`scalar`, called
back only for scalars whose first character may start an implicit tag), so `yes`, `0x1F`, `1_000` or
`2026-09-27T07:15:43+08:00` come out as PyYAML makes them. Anything else — nesting, anchors and aliases,
block scalars, comments, escapes, tabs, a colon inside a plain value — is declined (None) and read by PyYAML
within its bounds (processors.front_matter). Property tests hold every accepted block equal to
`yaml.load(block, CSafeLoader)` and the reading equal to its Python reference (tests/processors/reference/).
"""

from __future__ import annotations

import re
from datetime import datetime

import predigest_native
import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

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


# The timestamp writers' tools put in `date:` (`2026-09-27T07:15:43+08:00`): datetime reads it to the value and
# tzinfo PyYAML's constructor builds (a property test holds the two equal, refusals included) in a fortieth
# of its ~9 µs.
_ISO_SECONDS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}:[0-9]{2}")


class Declined(Exception):
    """A plain scalar PyYAML must read itself (a merge key, a value tag, a timestamp it would refuse)."""


def scalar(value: str) -> object:
    """A plain scalar as PyYAML resolves and constructs it (SafeLoader's implicit tags)."""
    if _ISO_SECONDS.fullmatch(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:  # `2026-13-45T…`, an offset of 24 hours: PyYAML's constructor refuses them too
            raise Declined from None
    for tag, regexp in _BY_FIRST.get(value[:1], _WILDCARD):
        if regexp.match(value):
            if tag not in _BUILT:
                raise Declined  # `<<`, `=`: merge keys and value tags are PyYAML's to read
            try:
                return _CONSTRUCTORS[tag](_CONSTRUCTOR, ScalarNode(tag, value))
            except Exception:  # `2026-13-45`: PyYAML's path raises it, after its own syntax checks
                raise Declined from None
    return value


_READER = predigest_native.PlainFrontMatter(resolve=scalar, starts="".join(_BY_FIRST), every=bool(_WILDCARD))


def read_plain(block: str) -> dict[object, object] | None:
    """The mapping PyYAML would load from `block`, when it is one `key: value` per line; None otherwise."""
    try:
        return _READER.read(block)
    except Declined:
        return None
