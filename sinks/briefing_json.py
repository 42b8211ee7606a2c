"""A briefing's JSON made a slice of its lists at a time: joined, the very bytes pydantic makes of it whole.

A 100k window's briefing is ~75 MB of compact JSON; made in slices, it is never held whole beside the model
(`emission_bodies.Body.made` packs each slice as it comes; `files.indented_pieces` indents it for the file).
"""

from __future__ import annotations

from collections.abc import Iterator

from processors.models import Briefing

SLICE = 2000  # list items serialised at a time (~2 MB of JSON for sources)


def json_pieces(briefing: Briefing) -> Iterator[bytes]:
    """`briefing`'s compact JSON by alias in pieces whose concatenation is `to_json` of it whole
    (tests/sinks/test_briefing_json.py); the `.json` file's indented bytes are made from them (`indented_pieces`)."""
    # Each field serialised alone is `{<key>: <value>}`: its braces come off.
    yield b"{"
    for n, name in enumerate(type(briefing).model_fields):
        if n:
            yield b","
        value = getattr(briefing, name)
        if isinstance(value, list) and len(value) > SLICE:
            yield from _list_pieces(briefing, name, value)
        else:
            yield _field(briefing, name)[1:-1]
    yield b"}"


def _field(briefing: Briefing, name: str) -> bytes:
    return briefing.__pydantic_serializer__.to_json(briefing, by_alias=True, include={name})


def _list_pieces(briefing: Briefing, name: str, items: list[object]) -> Iterator[bytes]:
    """A long list field's `<key>:[<items>]`, a slice of items at a time."""
    # `"key":[]`: the key and the brackets, as the whole's serialiser writes them.
    head = _field(briefing.model_copy(update={name: []}), name)[1:-2]
    yield head
    for at in range(0, len(items), SLICE):
        part = _field(briefing.model_copy(update={name: items[at : at + SLICE]}), name)
        if at:
            yield b","
        yield part[len(head) + 1 : len(part) - 2]
    yield b"]"
