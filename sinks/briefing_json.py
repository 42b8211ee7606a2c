"""A briefing's JSON made a slice of its lists at a time: joined, the very bytes pydantic makes of it whole.

A 100k window's briefing is ~75 MB of compact JSON and ~100 MB indented; made in slices, neither is held whole
beside the model (`sinks.emission_bodies.packed_texts` packs each slice as it comes).
"""

from __future__ import annotations

from collections.abc import Iterator

from processors.models import Briefing

SLICE = 2000  # list items serialised at a time (~2 MB of JSON for sources)


def json_pieces(briefing: Briefing, indent: int | None = None) -> Iterator[bytes]:
    """`briefing`'s JSON by alias (indented by `indent` spaces as the `.json` file is, else compact), in pieces
    whose concatenation is `to_json` of it whole (tests/sinks/test_briefing_json.py)."""
    # Each field serialised alone is `{<key>: <value>}` at the depth it has in the whole: its braces come off.
    opening, between, closing = (b"{", b",", b"}") if indent is None else (b"{\n", b",\n", b"\n}")
    yield opening
    for n, name in enumerate(type(briefing).model_fields):
        if n:
            yield between
        value = getattr(briefing, name)
        if isinstance(value, list) and len(value) > SLICE:
            yield from _list_pieces(briefing, name, value, indent)
        else:
            yield _inner(_field(briefing, name, indent), indent)
    yield closing


def _field(briefing: Briefing, name: str, indent: int | None) -> bytes:
    return briefing.__pydantic_serializer__.to_json(briefing, by_alias=True, include={name}, indent=indent)


def _inner(braced: bytes, indent: int | None) -> bytes:
    """A one-field object's JSON without its braces (and, indented, their line breaks)."""
    return braced[1:-1] if indent is None else braced[2:-2]


def _list_pieces(briefing: Briefing, name: str, items: list[object], indent: int | None) -> Iterator[bytes]:
    """A long list field's `<key>: [<items>]`, a slice of items at a time."""
    # `"key":[]` (or `  "key": []`): the key and the brackets, as the whole's serialiser writes them.
    empty = _inner(_field(briefing.model_copy(update={name: []}), name, indent), indent)
    head, tail = (empty[:-1], b"]") if indent is None else (empty[:-1] + b"\n", b"\n" + b" " * indent + b"]")
    yield head
    brace = 1 if indent is None else 2  # `{`, `}`; indented `{\n`, `\n}`
    for at in range(0, len(items), SLICE):
        part = _field(briefing.model_copy(update={name: items[at : at + SLICE]}), name, indent)
        if at:
            yield b"," if indent is None else b",\n"
        yield part[len(head) + brace : len(part) - len(tail) - brace]
    yield tail
