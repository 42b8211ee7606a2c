"""A briefing too large for one Kafka message, sent as consecutive parts of its JSON and joined again on reading.

A briefing whose JSON fits the message limit travels whole, as one message without these headers, exactly as
before. A larger one (a window of ~100k sources is ~80 MB) is cut into byte slices, each with the headers below;
every part has the same key (the axis), so they share a partition and arrive in order. A reader joins them
with `Joiner`; the parts of one briefing may be interleaved with other axes' messages, and a sender that
crashed half-way sends the whole series again, so a series restarts at its part 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

PART = "predigest-part"  # "<i>/<n>", 1-based
EMISSION = "predigest-emission"  # the briefing's basename: which series a part belongs to
SHA256 = "predigest-sha256"  # of the whole JSON, so a joined briefing is checked before it is used

Headers = list[tuple[str, bytes]]


@dataclass(frozen=True)
class Part:
    """One message of a briefing: its value and its headers (none for a briefing that travels whole)."""

    value: bytes
    headers: Headers


Pieces = Callable[
    [], Iterable[bytes | memoryview]
]  # a briefing's JSON in consecutive pieces, anew at each call


@dataclass(frozen=True)
class Series:
    """The messages of one briefing, each made from its JSON's pieces as it is sent (never the whole JSON at once)."""

    pieces: Pieces
    emission: str
    limit: int
    size: int  # of the whole JSON, in bytes
    digest: bytes  # its sha256, hex
    # The pieces of a JSON that fits one message, kept from the first read: a packed record's are unpacked
    # (zstd) anew at each `pieces()` call, and the message joins them anyway. None for a series of parts.
    whole: tuple[bytes | memoryview, ...] | None = None

    @classmethod
    def of(cls, pieces: Pieces, emission: str, limit: int) -> Series:
        """The series of the JSON `pieces()` yields: read once here for its size and checksum, and, cut into
        parts, again when sent (never held whole)."""
        digest = hashlib.sha256()
        size = 0
        kept: list[bytes | memoryview] = []
        for piece in pieces():
            digest.update(piece)
            size += len(piece)
            if size <= limit:
                kept.append(piece)
            else:
                kept.clear()  # parts: each made from the pieces again as it is sent
        whole = tuple(kept) if size <= limit else None
        return cls(pieces, emission, limit, size, digest.hexdigest().encode(), whole)

    def __len__(self) -> int:
        return 1 if self.size <= self.limit else -(-self.size // self.limit)

    def __iter__(self) -> Iterator[Part]:
        if self.size <= self.limit:
            yield Part(b"".join(self.pieces() if self.whole is None else self.whole), [])
            return
        n, index = len(self), 0
        pending: list[bytes | memoryview] = []
        have = 0
        for piece in self.pieces():
            view = memoryview(piece)
            while view:
                take = min(len(view), self.limit - have)
                pending.append(view[:take])
                have, view = have + take, view[take:]
                if have == self.limit:
                    index += 1
                    yield self._part(pending, index, n)
                    have = 0
        if pending:
            yield self._part(pending, n, n)

    def _part(self, pending: list[bytes | memoryview], index: int, n: int) -> Part:
        """The part joined from `pending`, emptied: its slices hold the unpacked frames (~24 MB) that must not
        stay alive while the part is sent."""
        value = b"".join(pending)
        pending.clear()
        return Part(value, self._headers(index, n))

    def _headers(self, index: int, n: int) -> Headers:
        return [(PART, f"{index}/{n}".encode()), (EMISSION, self.emission.encode()), (SHA256, self.digest)]


def split(briefing_json: bytes | memoryview, emission: str, limit: int) -> list[Part]:
    """The messages of one briefing: itself when it fits in `limit` bytes, else parts of at most `limit`."""
    return list(Series.of(lambda: (briefing_json,), emission, limit))


class PartError(ValueError):
    """A part that cannot be joined (bad headers, a gap, a checksum that does not match)."""


@dataclass
class _Series:
    first_offset: int
    parts: int
    digest: bytes
    chunks: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class Joined:
    """A whole briefing's JSON, and the offset of its first message (its last is the one just read)."""

    value: bytes
    first_offset: int


class Joiner:
    """Joins the parts read from one partition, in offset order; whole briefings pass straight through."""

    def __init__(self) -> None:
        self._open: dict[bytes, _Series] = {}

    def feed(self, offset: int, value: bytes, headers: Headers) -> Joined | None:
        """The briefing this message completes (or is), None while its series is incomplete; PartError if broken."""
        h = {k: v for k, v in headers}
        if PART not in h:
            return Joined(value, offset)
        index, parts, emission, digest = _parse(h)
        series = self._open.get(emission)
        if index == 1:  # a new series, or the same one sent again after a crash: start afresh
            series = self._open[emission] = _Series(offset, parts, digest)
        elif series is None or len(series.chunks) != index - 1 or series.parts != parts:
            self._open.pop(emission, None)
            raise PartError(
                f"part {index}/{parts} of {emission.decode(errors='replace')} without the ones before"
            )
        series.chunks.append(value)
        if index < parts:
            return None
        del self._open[emission]
        whole = b"".join(series.chunks)
        if hashlib.sha256(whole).hexdigest().encode() != series.digest:
            raise PartError(f"the parts of {emission.decode(errors='replace')} do not match their checksum")
        return Joined(whole, series.first_offset)

    def oldest_open(self) -> int | None:
        """The first offset of the earliest series still incomplete: a reader must not count itself past it."""
        return min((s.first_offset for s in self._open.values()), default=None)


def _parse(h: dict[str, bytes]) -> tuple[int, int, bytes, bytes]:
    try:
        i, n = (int(x) for x in h[PART].split(b"/"))
    except ValueError:
        raise PartError(f"bad {PART} header {h[PART]!r}") from None
    if not 1 <= i <= n or EMISSION not in h or SHA256 not in h:
        raise PartError(f"bad part headers {sorted(h)} ({h[PART]!r})")
    return i, n, h[EMISSION], h[SHA256]
