"""A recorded briefing as the control agent hands it on: its files and its topic message are made from it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from processors.models import Briefing, Trigger
from sinks.emission_bodies import Body, unpack, unpack_pieces
from sinks.emissions import EmissionRecord
from sinks.files import indented_pieces, pretty_json_bytes


@dataclass(frozen=True)
class Emission:
    """A recorded briefing as the control agent sends it: the recorded JSON, byte for byte.

    One this command made keeps its texts packed as recorded (`packed`: ~15 MB for a 100k window, not ~220),
    each unpacked only while its file is written or its message sent.
    """

    axis: str
    window_end: datetime
    trigger: Trigger
    basename: str
    recorded_json: bytes  # UTF-8, as recorded and sent (zstd-packed when `packed`: `json_bytes`)
    delivered: bool  # the briefing topic already acknowledged it: nothing to send
    # UTF-8 (zstd-packed when `packed`); None: restored from the briefings topic, rendered again when written.
    recorded_markdown: bytes | None = None
    fresh: bool = True  # recorded by this command (False: a repeated command found it recorded)
    requested_at: datetime | None = None  # when its command was requested (the briefing duration's start)
    packed: bool = False

    @classmethod
    def of(
        cls,
        axis: str,
        window_end: datetime,
        trigger: Trigger,
        record: EmissionRecord,
        fresh: bool,
        requested_at: datetime | None = None,
    ) -> Emission:
        """An emission as recorded (read back from the state)."""
        return cls(
            axis=axis,
            window_end=window_end,
            trigger=trigger,
            basename=record.basename,
            recorded_json=record.briefing_json,
            delivered=record.delivered,
            recorded_markdown=record.markdown,
            fresh=fresh,
            requested_at=requested_at,
        )

    @classmethod
    def made(
        cls,
        key: tuple[str, datetime, Trigger],
        basename: str,
        body: Body,
        requested_at: datetime | None,
    ) -> Emission:
        """The emission of a briefing this command made and recorded: its texts as packed for the record."""
        axis, window_end, trigger = key
        return cls(
            axis=axis,
            window_end=window_end,
            trigger=trigger,
            basename=basename,
            recorded_json=body.briefing_zst,
            delivered=False,
            recorded_markdown=body.markdown_zst,
            requested_at=requested_at,
            packed=True,
        )

    def json_bytes(self) -> bytes:
        """The recorded compact JSON, UTF-8 (a 100k window's is ~75 MB: made anew at each call when packed)."""
        return unpack(self.recorded_json) if self.packed else self.recorded_json

    def json_pieces(self) -> Iterator[bytes | memoryview]:
        """`json_bytes` in consecutive pieces (a few MB each when packed: never the ~75 MB whole)."""
        if self.packed:
            yield from unpack_pieces(self.recorded_json)
        else:
            yield self.recorded_json

    def markdown_pieces(self) -> Iterator[bytes | memoryview] | None:
        """The recorded Markdown, UTF-8, in consecutive pieces; None when restored from the briefings topic."""
        if self.recorded_markdown is None:
            return None
        return unpack_pieces(self.recorded_markdown) if self.packed else iter((self.recorded_markdown,))

    def json_file(self) -> Iterator[bytes | memoryview]:
        """The `.json` file's bytes in consecutive pieces: the recorded JSON, indented (one made here as it is
        unpacked, never parsed back into Python objects: the ~80 MB of a 100k window)."""
        if self.packed:
            return indented_pieces(unpack_pieces(self.recorded_json))
        return iter((pretty_json_bytes(self.recorded_json),))

    @property
    def briefing(self) -> Briefing:
        return Briefing.model_validate_json(self.json_bytes())
