"""The briefing browser on the worker's web port (issue 12 item 8): `/browse` (axis × date), a briefing, a note.

Read-only and under the read rules of `/status` (`web_read_token`); every page is read in a thread on a state
cursor of its own and kept for `status_refresh_seconds`, so readers cannot slow ingest.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from processors.browse import (
    BriefingPage,
    Listing,
    NoteShown,
    briefing_page,
    changes,
    history,
    index_page,
    note_page,
)
from sinks.clock import Clock
from sinks.state_reader import StateReader
from streams.pipeline import Pipeline
from streams.settings import Settings

CACHE_PAGES = 256
# No script, no frame, no request anywhere but here: a defence behind the escaping, which the tests prove alone.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class Page:
    status: int
    html: str


def _index(reader: StateReader, s: Settings) -> Page:
    axes = [a.name for a in s.axes]
    return Page(200, index_page(reader.emissions.entries(), axes, s.tz, s.lang))


def _briefing(reader: StateReader, s: Settings, axis: str, basename: str) -> Page:
    b = reader.emissions.by_basename(axis, basename)
    if b is None:
        return Page(404, "")
    entries = [e for e in reader.emissions.entries() if e.axis == axis]
    by_key = {(e.window_end, e.trigger): e for e in entries}
    # The axis's briefings in order (window end, then when recorded): the one before this is the previous.
    at = next((i for i, e in enumerate(entries) if (e.window_end, e.trigger) == (b.window.end, b.trigger)), 0)
    prev_name = entries[at - 1].basename if at > 0 else None
    previous = reader.emissions.by_basename(axis, prev_name) if prev_name else None
    listings = []
    for end, trigger, items in reader.emissions.discrepancy_lists(axis):
        entry = by_key.get((end, trigger))
        if entry is not None:
            ids = {str(d.get("id")) for d in json.loads(items)}
            listings.append((Listing(end, trigger, entry.basename), ids))
    page = BriefingPage(
        b, changes(b, previous, prev_name), history((d.id for d in b.discrepancies), listings)
    )
    return Page(200, briefing_page(page, s.tz, s.lang))


def _note(reader: StateReader, s: Settings, path: str) -> Page:
    note = reader.note(path)
    if note is None:
        return _never_stored(reader, s, path)
    versions = [(v.sha256, v.event_time, v.current) for v in note.versions]
    shown = NoteShown(note.deleted, note.unreadable, note.refused)
    return Page(200, note_page(path, note.document, versions, shown, s.tz, s.lang))


def _never_stored(reader: StateReader, s: Settings, path: str) -> Page:
    """A path refused at the door before any version of it was stored: its refusal, why and when; else 404."""
    refusal = reader.refusal(path)
    if refusal is None:
        return Page(404, "")
    shown = NoteShown(refused=refusal.reason, refused_code=refusal.code, refused_at=refusal.seen_at)
    return Page(200, note_page(path, None, [], shown, s.tz, s.lang))


class Browser:
    """The pages, each read once per `status_refresh_seconds` whoever asks."""

    def __init__(self, settings: Settings, pipeline: Callable[[], Pipeline], clock: Clock) -> None:
        self._settings = settings
        self._pipeline = pipeline
        self._clock = clock
        self._cache: OrderedDict[tuple[str, ...], tuple[float, Page]] = OrderedDict()
        self._lock = asyncio.Lock()

    async def index(self) -> Page:
        return await self._page(("index",), lambda r: _index(r, self._settings))

    async def briefing(self, axis: str, basename: str) -> Page:
        if self._settings.axis(axis) is None:
            return Page(404, "")
        return await self._page(
            ("briefing", axis, basename), lambda r: _briefing(r, self._settings, axis, basename)
        )

    async def note(self, path: str) -> Page:
        return await self._page(("note", path), lambda r: _note(r, self._settings, path))

    async def _page(self, key: tuple[str, ...], read: Callable[[StateReader], Page]) -> Page:
        # One page read at a time: a burst of readers costs one thread, never the event loop.
        async with self._lock:
            hit = self._cache.get(key)
            now = self._clock.monotonic()
            if hit is not None and now - hit[0] <= self._settings.status_refresh_seconds:
                return hit[1]
            state = self._pipeline().state  # the reader opened in the thread: it waits for a batch's commit
            page = await asyncio.to_thread(lambda: _read(state.reader(), read))
            self._cache[key] = (now, page)
            self._cache.move_to_end(key)
            while len(self._cache) > CACHE_PAGES:
                self._cache.popitem(last=False)
            return page


def _read(reader: StateReader, read: Callable[[StateReader], Page]) -> Page:
    with reader:
        return read(reader)
