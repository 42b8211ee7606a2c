"""YAML front matter read within bounds: the block is measured in bytes before it is parsed, and its aliases are
counted as the copies they expand to before any Python object is built from it.

A YAML alias costs a few bytes and names a node of any size: 3,125 aliases of one 100 KiB string made a 312 MB
front matter out of 300 KiB of text (every documents record carries the front matter), and merge keys (`<<`)
copy a mapping's entries once per alias while the constructor runs. So the composed node graph is weighed
first, each alias as a full copy, and a block that would grow past a few times its own size is refused.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time

import yaml
from frontmatter.default_handlers import YAMLHandler

from processors.plain_front_matter import read_plain
from processors.reasons import WarningCode

# Front matter is a handful of fields; a block over this is not metadata and is not parsed at all.
MAX_BYTES = 64 * 1024
# Characters of every scalar plus one per node, each alias counted as a copy of what it names. A block without
# aliases stays under twice its byte size; this leaves room for an alias or two of a long value, not for bombs.
MAX_EXPANDED = 4 * MAX_BYTES
# Values in the JSON-safe copy: a front matter is a few fields, not a data set.
NODE_BUDGET = 10_000
_LEAVES = frozenset({str, int, bool, type(None)})  # most of a front matter's values: kept as they are

_HANDLER = YAMLHandler()  # its boundary rule (`---` lines) is what writers' tools produce
_BOUNDARY: re.Pattern[str] = _HANDLER.FM_BOUNDARY
_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class FrontMatter:
    """What a note's text opens with: its JSON-safe fields, the raw `date` value, and the body after it."""

    fields: dict[str, object]
    date: object
    body: str


class _TooLarge(Exception):
    pass


def split_front_matter(text: str, warnings: list[tuple[WarningCode, str]]) -> FrontMatter:
    """The front matter of `text`, if any; what cannot be used is ignored with a warning, never raised."""
    if not _HANDLER.detect(text):
        return FrontMatter({}, None, text)
    split = _split(text)
    if split is None:
        warnings.append(("front_matter", "front matter has no closing '---'; read as body"))
        return FrontMatter({}, None, text)
    block, body = split
    size = len(block.encode("utf-8", errors="replace"))
    if size > MAX_BYTES:
        warnings.append(
            ("front_matter", f"front matter is {size} bytes, over the limit of {MAX_BYTES}; ignored")
        )
        return FrontMatter({}, None, body)
    try:
        plain = read_plain(block)  # one `key: value` per line, as most notes have it: no PyYAML needed
        data = load_bounded(block) if plain is None else plain
    except _TooLarge:
        warnings.append(("front_matter", "front matter expands past its size limit through aliases; ignored"))
        return FrontMatter({}, None, body)
    except Exception as exc:  # PyYAML raises YAMLError, but deep nesting can raise others
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        warnings.append(("front_matter", f"front matter is not valid YAML ({first}); ignored"))
        return FrontMatter({}, None, body)
    if data is None:
        return FrontMatter({}, None, body)
    if not isinstance(data, dict):
        warnings.append(("front_matter", "front matter is not a mapping; ignored"))
        return FrontMatter({}, None, body)
    try:
        safe = json_safe(data, [NODE_BUDGET])
    except (ValueError, RecursionError):
        warnings.append(("front_matter", "front matter is too large or too deeply nested; ignored"))
        return FrontMatter({}, None, body)
    assert isinstance(safe, dict)
    return FrontMatter(safe, data.get("date"), body)


def _split(text: str) -> tuple[str, str] | None:
    """The handler's split (block between its first two boundaries, and the body after them) less the closing
    line's own break; None without a closing line. The body is sliced once: a 13 KB note's copy is ~15 µs."""
    found = _BOUNDARY.finditer(text)
    opening, closing = next(found, None), next(found, None)
    if opening is None or closing is None:
        return None
    start = closing.end()
    start += 2 if text.startswith("\r\n", start) else 0
    start += 1 if text.startswith("\n", start) else 0
    return text[opening.end() : closing.start()], text[start:]


def load_bounded(block: str, limit: int = MAX_EXPANDED) -> object:
    """`yaml.safe_load` of one document, refused (_TooLarge) when its aliases would expand it past `limit`."""
    loader = _LOADER(block)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if expanded_size(node, limit) > limit:
            raise _TooLarge
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def expanded_size(root: yaml.Node, limit: int) -> int:
    """Scalar characters plus one per node, every alias counted as a copy; limit + 1 once past `limit`.

    A depth-first walk over the composed graph: shared nodes are weighed once and their weight reused, so the
    walk costs the graph's size, not its expansion. A node that contains itself expands without end.
    """
    weight: dict[int, int] = {}
    open_nodes = {id(root)}
    stack = [(root, _children(root))]
    while stack:
        node, rest = stack[-1]
        child = next(rest, None)
        if child is None:
            stack.pop()
            open_nodes.discard(id(node))
            own = 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)
            weight[id(node)] = min(limit + 1, own + sum(weight[id(c)] for c in _children(node)))
        elif id(child) in open_nodes:
            return limit + 1  # a recursive alias: `&a [*a]`
        elif id(child) not in weight:
            open_nodes.add(id(child))
            stack.append((child, _children(child)))
    return weight[id(root)]


def json_safe(value: object, budget: list[int]) -> object:
    """The loaded front matter as JSON values (dates as ISO text, bytes as base64); ValueError past `budget`."""
    _count(1, budget)
    return _safe(value, budget)


def _count(nodes: int, budget: list[int]) -> None:
    budget[0] -= nodes
    if budget[0] < 0:
        raise ValueError("front matter too large")


def _safe(value: object, budget: list[int]) -> object:
    """`json_safe` of a node already counted. A mapping or list counts its members at once and copies its plain
    ones in place: a call and a count for each member was ~7 µs of a note's front matter."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is datetime:  # every note's `date`, before the longer tests below
        assert isinstance(value, datetime)
        return value.isoformat()
    if isinstance(value, dict):
        _count(len(value), budget)
        return {k if type(k) is str else str(k): v if type(v) in _LEAVES else _safe(v, budget)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list | tuple | set | frozenset):
        _count(len(value), budget)
        return [v if type(v) in _LEAVES else _safe(v, budget) for v in value]
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)
