"""What a briefing is assembled from: the state's reads of one axis window, and the request made of them."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import ParamSpec, TypeVar

import duckdb

from processors.arxiv_atom import EnrichedId
from processors.briefing import WindowReads, briefing_of, read_window
from processors.briefing_request import BriefingHistory, BriefingRequest, Loader
from processors.errors import BuildCancelledError
from processors.models import AxisSpec, Briefing, ControlCommand, Document, Rejection
from processors.window import window_bounds
from sinks.clock import Clock
from sinks.enrichment import Enricher
from sinks.state import StateStore
from sinks.unreadable import Unreadable
from sinks.window_reads import StoredWindow
from streams.logs import doc_context
from streams.settings import Settings

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)
# DuckDB's memory limit while a briefing reads its notes whole: 48 MiB could not pin their blocks at 100k.
LOAD_MIB = 96
# Windows of fewer sources keep DuckDB's pool through their reads (no shed, notes read at the full limit): their
# reads cache a few tens of MiB, and shedding cost a 10k briefing ~0.05 s of reading the blocks again and of the
# lowered limit (docs/performance.md, "The 10k briefing's sheds").
SHED_FROM = 20_000
# Why a briefing has no living document, and for a damaged one what changes that (docs/operations.md).
_NEVER_STORED = "never reached the worker (not published, or older than the documents topic's retention)"
_DAMAGED = "is stored, but its text is damaged and cannot be read (listed among the briefing's rejected)"
_DAMAGED_FIX = ": edit it (the same content again, or a `predigest rebuild`, keeps the damaged copy)"
# A row of it missing (a bug, a partial repair, a hand edit): a rebuild writes both rows again from the record.
_ROW_MISSING = "is stored, but a row of it is missing from the state (listed among the briefing's rejected)"
_ROW_MISSING_FIX = (
    ": a `predigest rebuild` restores it while the documents topic still holds its record; else edit it"
)
# Its file refused at the door since it was stored (a symlink now, over max_bytes …): the stored text is not its.
_REFUSED = "is refused at the door since it was stored ({}; listed among the briefing's rejected)"
_REFUSED_FIX = ": make the file a readable regular file again (the same bytes brief it again)"
_UNREAD: dict[str | None, tuple[str, str]] = {
    "damaged": (_DAMAGED, _DAMAGED_FIX),
    "row_missing": (_ROW_MISSING, _ROW_MISSING_FIX),
}


@dataclass(frozen=True)
class Assembly:
    """One worker's briefing reads: its settings, its state (as it is now), its clock and arXiv enricher."""

    settings: Settings
    state: StateStore
    clock: Clock
    enricher: Enricher | None = None

    async def briefing(
        self, axis: AxisSpec, command: ControlCommand, cancelled: threading.Event
    ) -> tuple[Briefing, int]:
        """The briefing of the window ending at the command's end, from the current state; and how many sources
        its window holds. Once `cancelled` is set, its thread ends at its next read (`unless`)."""
        # The window's sources are pinned first and read as rows in the briefing's thread (`StoredWindow`); only
        # the few notes the briefing quotes are read whole.
        window = window_bounds(command.end, self.settings.window_length)
        # Every read of the state at one moment, the window pinned, before the awaits below: the window agent
        # commits in a thread of its own, and a note stored between two reads would show as both a source and
        # superseded, or as a source and rejected. The stored notes they cannot load whole are listed among the
        # briefing's rejected (code damaged).
        unreadable = self.state.unreadable()
        with self.state.unchanged():
            # Yesterday's briefing is usually stamped with its date only (00:00), before the window opens.
            baseline = self.state.latest_baseline(
                axis.name, window.start, window.start - self.settings.window_length, unreadable
            )
            source = self.state.window(axis.name, window, baseline)
            try:
                sheds = source.size() >= SHED_FROM
                living = self.state.living_documents([a.name for a in self.settings.axes], unreadable)
                rejected = self.state.rejections(window, axis.name)
                history = self._history(axis, command, source, baseline)
            except BaseException:
                source.close()
                raise
        try:
            request = BriefingRequest(
                axis=axis,
                trigger=command.trigger,
                window=window,
                generated_at=self.clock.now(),
                zone=self.settings.tz,
                living=self._living(axis, living[axis.name], unreadable, rejected),
                axes=self.settings.axes,
                other_living={a.name: living[a.name] for a in self.settings.axes if a != axis},
                rejected=rejected,
                history=history,
                arxiv_records=await self._arxiv_records(source.arxiv_ids()),
                load=unless(cancelled, self._loader(source, sheds)),
                lang=self.settings.lang,
                rules=self.settings.briefing_rules,
                source=source,
                between_reads=unless(cancelled, self._shedder(source) if sheds else _keep),
                stop=cancelled,  # looked at between the build's steps (`briefing_of`) too
            )
            # In a thread: a window of large notes takes seconds, and the event loop must keep heartbeating to
            # the consumer group meanwhile, or the worker is evicted mid-briefing. The window reads through a
            # cursor of its own while the window agent goes on writing.
            reads = await asyncio.to_thread(read_window, request)
            _said_read_again(axis.name, reads)
            # Listed once every note is read whole (the briefing's own reads are all in read_window), once each.
            if listed := {r.path: r for r in [*unreadable.of(axis.name), *source.unreadable.of(axis.name)]}:
                request = replace(request, rejected=[*rejected, *listed.values()])
            # The window's reads are over but for a few term counts: what DuckDB cached for them (~160 MiB at
            # 100k) makes room for the model built next. Under the state's lock, never beside a write, the
            # window's cursor idle.
            if sheds:
                self.state.shed_cache(idle=source)
            return await asyncio.to_thread(briefing_of, request, reads), reads.size
        except asyncio.CancelledError:
            cancelled.set()  # before the cursor's close below: the thread ends at its next read, not on a closed one
            raise
        finally:
            source.close()

    def _loader(self, source: StoredWindow, lowered: bool) -> Loader:
        """How the briefing's thread reads its few notes whole: with DuckDB's memory limit at LOAD_MIB when
        `lowered`, under the state's lock (no write meanwhile). A note read whole pulls several MiB of its column's
        blocks into DuckDB's cache (~150 MiB for the 80 notes of a 100k window, beside its model); at the full
        limit when that is not enough."""

        def load(paths: Sequence[str]) -> list[Document]:
            if not lowered:
                return source.load(paths)
            try:
                with self.state.lowered_limit(LOAD_MIB, idle=source):
                    return source.load(paths)
            except duckdb.OutOfMemoryException:
                return source.load(paths)

        return load

    def _shedder(self, source: StoredWindow) -> Callable[[], None]:
        """What the briefing's thread calls between its reads: DuckDB's cache shed under the state's lock (never
        beside a write), the briefing's own cursor idle meanwhile."""

        def shed() -> None:
            self.state.shed_cache(idle=source)

        return shed

    def _history(
        self, axis: AxisSpec, command: ControlCommand, source: StoredWindow, baseline: Document | None
    ) -> BriefingHistory:
        """D numbers from every briefing of the axis (a past window re-emitted must not give a number a later
        briefing used to something else, and a close must see the flush that ended at the same time); cited
        ids and titles from the earlier ones only; and the D numbers of the axis's baseline notes."""
        here = (command.end, command.trigger)
        recorded = self.state.earlier_briefings(axis.name, _END_OF_TIME)
        earlier = [b for b in recorded if b.window.end < command.end]
        others = [b for b in recorded if b.window.end >= command.end and (b.window.end, b.trigger) != here]
        baselines = [*source.load(source.own_baselines()), *([baseline] if baseline else [])]
        return BriefingHistory.of(earlier, (d.text for d in baselines), others)

    def _living(
        self, axis: AxisSpec, living: Document | None, unreadable: Unreadable, rejected: Sequence[Rejection]
    ) -> Document | None:
        if living is None and axis.living_doc:  # said here, not at start-up: the file may be on its way then
            code = next((r.reason_code for r in unreadable.of(axis.name) if r.path == axis.living_doc), None)
            what, fix = _UNREAD.get(code, (_NEVER_STORED, ""))
            refused = next((r for r in rejected if r.path == axis.living_doc), None)
            if refused is not None:
                what, fix = _REFUSED.format(refused.reason), _REFUSED_FIX
            log.warning(
                "briefing %s without its living document: %s %s; its sections show as TBD until the file changes%s",
                axis.name,
                axis.living_doc,
                what,
                fix,
                extra=doc_context(axis.living_doc, axis.name),
            )
        return living

    async def _arxiv_records(self, ids: Sequence[str]) -> Mapping[str, EnrichedId]:
        """arXiv metadata for the window's ids; whatever goes wrong, the briefing falls back to the documents."""
        if self.enricher is None or not ids:
            return {}
        try:
            return await self.enricher.enrich(ids)
        except Exception:
            # Enrichment is an extra: a bug in it must not cost the operator the briefing.
            log.exception("arXiv enrichment failed; the %d id(s) keep their document titles", len(ids))
            return {}


def _said_read_again(axis: str, reads: WindowReads) -> None:
    """Log a briefing whose damaged notes freed more contributors' slots than its first read's reserve held."""
    if reads.read_again:
        log.info(
            "briefing %s: %d damaged notes freed more contributors' slots than the reserve ranked beside them "
            "held: the window was read again, once (~+45 %% of its CPU); %d slot(s) left empty",
            axis,
            len(reads.lost),
            reads.unfilled,
        )


def _keep() -> None:
    """`between_reads` of a window too small to shed for: DuckDB's pool is kept."""


def unless(cancelled: threading.Event, step: Callable[P, T]) -> Callable[P, T]:
    """`step`, until a briefing is `cancelled`: its task's cancellation does not reach its thread, which then
    ends at its next call of `step` instead of briefing on past the worker's stop."""

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if cancelled.is_set():
            raise BuildCancelledError("the briefing's build was cancelled")
        return step(*args, **kwargs)

    return run


def each_unless(cancelled: threading.Event, pieces: Iterable[T]) -> Iterator[T]:
    """`pieces`, until a briefing is `cancelled` (as `unless`): its packing's thread ends at its next piece."""
    for piece in pieces:
        if cancelled.is_set():
            raise BuildCancelledError("the briefing's build was cancelled")
        yield piece
