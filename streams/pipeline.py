"""What the agents do with each record: call processors, hand results to sinks."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import httpx

from processors.briefing_names import briefing_basename
from processors.briefing_parts import Series
from processors.commands import Refused
from processors.dead_letters import Failure
from processors.i18n import reason_alone
from processors.models import AxisSpec, Briefing, ControlCommand, Trigger
from processors.parse_stage import Routed, RouteParams
from processors.render_markdown import load_template, markdown_pieces, render_markdown
from processors.wire import DocumentRecord
from processors.wire_frames import NOTE_RECORD_LIMIT
from sinks import collector, duck
from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient, ArxivPolicy
from sinks.briefing_json import json_pieces
from sinks.clock import Clock
from sinks.emission_bodies import PER_SOURCE, Body
from sinks.enrichment import Enricher
from sinks.files import BriefingFiles
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
from streams.assembly import Assembly, each_unless
from streams.briefing_stop import BuildStop
from streams.emission import Emission
from streams.heap import briefing_heap, release_free_heap
from streams.ingest_activity import IngestActivity
from streams.kafka_io import BRIEFING_PART_BYTES, MAX_MESSAGE_BYTES
from streams.logs import doc_context
from streams.ownership import key_partition
from streams.settings import Settings
from streams.store_report import StoredBatch, report

log = logging.getLogger(__name__)

USER_AGENT = "predigest/0.1 (E1 pre-digest briefings; arXiv id metadata)"
# What the operator does before replaying a command that failed every attempt, by its dead letter's reason.
_FIX = {
    "briefing_failed": "fix the cause this traceback shows",
    # A StateMemoryError is a state write refused at the ceiling, which the memory limit (below it) cannot lift.
    "briefing_memory": "raise PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB (PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB too, for a "
    "StateMemoryError; the worker's memory, for a MemoryError)",
}


def make_enricher(settings: Settings, metrics: Metrics, clock: Clock) -> Enricher:
    """The worker's arXiv enricher: its cache always, the API only when `arxiv.enabled`."""
    arxiv = settings.arxiv
    cache = ArxivCache(
        settings.arxiv_cache_file,
        negative_ttl=timedelta(hours=arxiv.negative_ttl_hours),
        clock=clock,
        limits=duck.Limits(memory_mib=arxiv.cache_memory_limit_mib, threads=arxiv.cache_threads),
    )
    client = None
    if arxiv.enabled:
        http = httpx.AsyncClient(headers={"User-Agent": USER_AGENT}, follow_redirects=True)
        policy = ArxivPolicy(
            base_url=arxiv.base_url,
            batch_size=arxiv.batch_size,
            min_interval_seconds=arxiv.min_interval_seconds,
            timeout_seconds=arxiv.timeout_seconds,
            max_retries=arxiv.max_retries,
            backoff_seconds=arxiv.backoff_seconds,
        )
        client = ArxivClient(http, policy, metrics=metrics, clock=clock)
    return Enricher(cache, client, metrics)


def route_params(settings: Settings) -> RouteParams:
    """What the parse stage needs of the settings (sent once to each parse process)."""
    return RouteParams(
        axes=tuple(settings.axes),
        zone=settings.tz,
        max_bytes=settings.max_bytes,
        message_limit=NOTE_RECORD_LIMIT,
        partitions={a.name: key_partition(a.name, settings.kafka.partitions) for a in settings.axes},
        record_bytes=settings.kafka.record_bytes,
    )


class Pipeline:
    """The stateful side of one worker: DuckDB state, briefing files and metrics."""

    def __init__(
        self,
        settings: Settings,
        state: StateStore,
        metrics: Metrics,
        clock: Clock,
        enricher: Enricher | None = None,
        build_stop: BuildStop | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.metrics = metrics
        self.files = BriefingFiles(settings.out_dir)
        self.files.clean_up(clock.now().timestamp())
        self.clock = clock
        self.enricher = enricher
        self.build_stop = build_stop or BuildStop()  # the worker's stop, as the briefing being built sees it
        # A state found damaged while running is replaced under this lock (streams.state_sync): a briefing in
        # progress finishes first, and the next one waits until the new state has caught up.
        self.briefing_lock = asyncio.Lock()
        # Whether the window agent (or a catch-up) is storing: the state's vacuum waits for a quiet moment.
        self.activity = IngestActivity(clock)
        load_template()  # once per worker: a briefing command's answer does not wait for it

    def unreadable(self, stage: str, why: str) -> None:
        """A record no version can read, however often it is delivered: dead-lettered, loudly, and counted."""
        topic = self.settings.kafka.topic(stage)
        first = why.splitlines()[0] if why else "?"
        log.error("an unreadable record on %s goes to the dead-letter topic: %s", topic, first)
        self.metrics.records_unreadable.labels(stage=stage).inc()

    def refuse_command(self, command: ControlCommand, refused: Refused, position: Position) -> None:
        """A command that must not be acted on: logged and counted here, then dead-lettered, never retried."""
        log.warning(
            "refused the %s command %r on %s partition %d offset %d (%s): %s",
            command.trigger,
            command.request_id[:64],
            position.topic,
            position.partition,
            position.offset,
            refused.reason,
            refused.detail,
            extra={"axis": command.axis[:64]},
        )
        self.metrics.commands_refused.labels(reason=refused.reason).inc()

    def command_failed(
        self, command: ControlCommand, failure: Failure, error: BaseException, position: Position
    ) -> None:
        """A command whose answer failed every attempt, now on the dead-letter topic: logged with its traceback and
        counted here (after the dead-letter limit sorted it: one that stopped the worker is not)."""
        log.error(
            "the %s command %r on %s partition %d offset %d %s at every attempt (%s): %s; it went to the "
            "dead-letter topic and the worker answers the next command: %s, then `predigest dead replay` "
            "re-drives it",
            command.trigger,
            command.request_id[:64],
            position.topic,
            position.partition,
            position.offset,
            "ran out of memory" if failure.reason == "briefing_memory" else "failed",
            failure.reason,
            failure.error,
            _FIX[failure.reason],
            exc_info=error,
            extra={"axis": command.axis},
        )
        self.metrics.commands_failed.labels(axis=command.axis, trigger=command.trigger).inc()

    def note(self, routed: Routed) -> None:
        """Log and count what routing a raw record found: the parse agent's side of `route_file`."""
        path, ctx = routed.path, doc_context(routed.path)
        if routed.unreadable is not None:
            self.unreadable("raw", routed.unreadable)
            return
        if routed.error is not None:
            log.error("routing %s failed; recorded as rejected\n%s", path, routed.error.rstrip(), extra=ctx)
        if routed.too_big is not None:
            log.warning("rejected %s (limit): %s", path, reason_alone(path, routed.too_big), extra=ctx)
            self.metrics.documents_rejected.labels(reason="limit").inc()
        elif routed.rejection is not None:
            label = routed.rejection_code or "parse"
            if routed.refused:  # the watcher counted its own refusals already
                log.info("%s was refused by the watcher (%s); listed as rejected", path, label, extra=ctx)
            else:
                log.warning(
                    "rejected %s (%s): %s", path, label, reason_alone(path, routed.rejection), extra=ctx
                )
                self.metrics.documents_rejected.labels(reason=label).inc()
        if routed.warnings:
            for code in routed.warning_codes:
                self.metrics.documents_warned.labels(reason=code).inc()
            log.warning("kept %s with warnings: %s", path, "; ".join(routed.warnings), extra=ctx)
        if not routed.records and not routed.packed:
            log.info("%s is the living document of no configured axis; not stored", path, extra=ctx)

    def store_batch(
        self,
        items: Sequence[tuple[DocumentRecord, Position | None]],
        *,
        replaying: bool = False,
        backlog: bool = False,
        into: StateStore | None = None,
    ) -> list[bool]:
        """Apply documents records in one DuckDB transaction; per record, whether a briefing sees it.

        `replaying`: a catch-up or rebuild (no lag observed, no INFO line); `backlog`: more records wait behind
        the batch, which gets one INFO line instead of one per document; `into`: the state open when the batch
        was found ready (a store run later in a thread fails on it once replaced, never writing into the
        replacement before its catch-up).
        """
        if not items:
            return []
        started = self.clock.monotonic()
        changed = (self.state if into is None else into).apply_batch(items)
        took = self.clock.monotonic() - started
        self.activity.stirred()
        self.metrics.duckdb_write.labels(operation="batch").observe(took)
        now = self.clock.now().timestamp()
        report(StoredBatch(items, changed, took, now, replaying, backlog), self.metrics)
        return changed

    async def brief(self, command: ControlCommand, at: Position | None = None) -> Emission | None:
        """The emission a command asks for, once per (axis, window end, trigger), recorded (not yet written).

        Recorded first; its files and topic message are made from the record (`write_files`, the control
        agent's deliver): a crash anywhere in between is repaired with the same bytes. None for an unknown axis.
        `at`: the command's record, which the worker's stop leaves unacknowledged if it cuts the build short.
        """
        async with self.briefing_lock:
            # glibc's small thresholds while briefing a large axis: its large blocks leave as freed (streams.heap)
            with collector.paused(), briefing_heap(self.state.document_count(command.axis)):
                return await self._brief(command, at)

    async def _brief(self, command: ControlCommand, at: Position | None) -> Emission | None:
        axis = self.settings.axis(command.axis)
        if axis is None:
            log.warning(
                "command for unknown axis %r ignored; configured: %s",
                command.axis,
                [a.name for a in self.settings.axes],
            )
            return None
        record = self.state.emission_record(axis.name, command.end, command.trigger)
        if record is None:
            return await self._made(axis, command, at)
        log.info(
            "briefing for %s ending %s (%s) already emitted; nothing new%s",
            axis.name,
            command.end.isoformat(),
            command.trigger,
            "" if record.delivered else " (re-sending the recorded one: it was never acknowledged)",
        )
        self.metrics.briefings_repeated.labels(axis=axis.name, trigger=command.trigger).inc()
        return Emission.of(axis.name, command.end, command.trigger, record, False, command.requested_at)

    async def _made(self, axis: AxisSpec, command: ControlCommand, at: Position | None) -> Emission:
        """The briefing made and recorded now (or by another meanwhile: then as recorded)."""
        # Set by the worker's stop: the briefing's threads end at their next step.
        cancelled = threading.Event()
        taken = None if at is None else (at.topic, at.partition, at.offset)
        try:
            built = partial(self._built, axis, command, cancelled)
            briefing, window_size, body = await self.build_stop.build(built, cancelled, taken)
        except asyncio.CancelledError:  # nothing recorded yet: the restart makes it again
            cancelled.set()
            log.warning(
                "the %s briefing of %s ending %s was cancelled%s",
                command.trigger,
                axis.name,
                command.end.isoformat(),
                self.build_stop.cancelled_by(),
                extra={"axis": axis.name},
            )
            raise
        basename = briefing_basename(axis.name, command.end, command.trigger, self.settings.tz)
        # The model (~0.3 GiB at 100k sources) goes before the record's write: its texts stay packed (~15 MB, not
        # ~220), each unpacked a few MB at a time when its file is written or its message sent.
        head, counted = briefing.model_copy(update={name: [] for name in PER_SOURCE}), _Counted.of(briefing)
        del briefing
        release_free_heap()
        with self.metrics.duckdb_write.labels(operation="emission").time():
            recorded = self.state.record_emission(
                head, basename, None, emitted_at=self.clock.now(), body=body
            )
        # The record's write and the texts' packing refilled DuckDB's cache; the message parts are made next.
        self.state.shed_cache()
        release_free_heap()
        self._count_emission(head, counted, window_size)
        key = (axis.name, command.end, command.trigger)
        if recorded:
            return Emission.made(key, basename, body, command.requested_at)
        record = self.state.emission_record(*key)
        assert record is not None, "an emission just recorded must be readable"
        return Emission.of(*key, record, True, command.requested_at)

    async def _built(
        self, axis: AxisSpec, command: ControlCommand, cancelled: threading.Event
    ) -> tuple[Briefing, int, Body]:
        """The briefing, how many sources its window holds, and its texts packed; nothing recorded yet."""
        reads = Assembly(self.settings, self.state, self.clock, self.enricher)
        briefing, window_size = await reads.briefing(axis, command, cancelled)
        # Shed again: the window agent's writes meanwhile cached blocks, and the texts need the room (under the
        # state's lock, never beside a write).
        if not self.state.shed_cache():
            log.debug("DuckDB's cache kept through this briefing's texts: a read was open or no limit is set")
        # In a thread: each is seconds for a window of 100k sources.
        return briefing, window_size, await asyncio.to_thread(self._packed, briefing, cancelled)

    def _packed(self, briefing: Briefing, cancelled: threading.Event) -> Body:
        """The briefing as recorded: its compact JSON and Markdown packed (its `.json` file is indented from the
        former as it is written, `Emission.json_file`).

        Each is made a slice at a time and packed as it comes: none of the ~100 MB texts of a 100k window is
        held whole beside the model.
        """
        markdown = markdown_pieces(briefing, lang=self.settings.lang, zone=self.settings.tz)
        encoded = (piece.encode() for piece in markdown)
        return Body.made(
            briefing, each_unless(cancelled, encoded), each_unless(cancelled, json_pieces(briefing))
        )

    def recorded(self, axis: str, window_end: datetime, trigger: Trigger) -> Emission | None:
        """The recorded emission of (axis, window end, trigger), as the control agent would hand it on."""
        record = self.state.emission_record(axis, window_end, trigger)
        return None if record is None else Emission.of(axis, window_end, trigger, record, fresh=False)

    def messages(self, emission: Emission) -> Series:
        """The briefings-topic message(s) of an emission: itself, or parts when it is over the message limit; each
        made as it is sent, from the recorded JSON a few MB at a time (a 100k window's is ~80 MB)."""
        parts = Series.of(emission.json_pieces, emission.basename, BRIEFING_PART_BYTES)
        if len(parts) > 1:
            log.info(
                "briefing %s is %.1f MB, over the %d MiB message limit: sent to the briefings topic in %d parts",
                emission.basename,
                parts.size / 1e6,
                MAX_MESSAGE_BYTES >> 20,
                len(parts),
                extra={"axis": emission.axis},
            )
            self.metrics.briefings_split.labels(axis=emission.axis).inc()
        return parts

    def delivered(self, emission: Emission) -> None:
        """The briefing topic acknowledged the emission: a repeated command will send nothing."""
        self.state.mark_delivered(emission.axis, emission.window_end, emission.trigger, self.clock.now())

    def write_files(self, emission: Emission) -> list[Path]:
        """Write the emission's files from its record, whichever are missing or differ; raises when they cannot be."""
        written = self.files.ensure_made(
            emission.axis, emission.basename, emission.json_file, partial(self._markdown_file, emission)
        )
        if emission.fresh and emission.requested_at is not None:
            # From the command's request (queueing and catch-up included) to its files on disk, once each.
            took = (self.clock.now() - emission.requested_at).total_seconds()
            labels = {"axis": emission.axis, "trigger": emission.trigger}
            self.metrics.briefing_duration.labels(**labels).observe(max(0.0, took))
        if written and not emission.fresh:
            log.warning("restored missing briefing file(s) from the record: %s", [str(p) for p in written])
        return written

    def _markdown_file(self, emission: Emission) -> Iterable[bytes | memoryview]:
        markdown = emission.markdown_pieces()
        if markdown is None:  # restored from the briefings topic, which carries the JSON only
            text = render_markdown(emission.briefing, lang=self.settings.lang, zone=self.settings.tz)
            return (text.encode(),)
        return markdown

    def _count_emission(self, briefing: Briefing, counted: _Counted, window_documents: int) -> None:
        """Count an emission recorded (`briefing`: its head, without the per-source lists)."""
        axis = briefing.axis
        self.metrics.briefings_emitted.labels(axis=axis, trigger=briefing.trigger).inc()
        self.metrics.last_briefing.labels(axis=axis).set(self.clock.now().timestamp())
        self.metrics.window_documents.labels(axis=axis).set(window_documents)
        for kind, n in counted.duplicates.items():
            self.metrics.duplicates.labels(axis=axis, kind=kind).inc(n)
        log.info(
            "emitted briefing %s ending %s (%s; %d sources, %d increments, %d of %d arXiv ids verified)",
            axis,
            briefing.window.end.isoformat(),
            briefing.trigger,
            counted.sources,
            len(briefing.increments),
            sum(1 for a in briefing.arxiv if a.metadata.source != "document"),
            len(briefing.arxiv),
        )


@dataclass(frozen=True)
class _Counted:
    """What an emission's metrics and log line read of its per-source lists, read before the model goes."""

    sources: int
    duplicates: Counter[str]  # duplicate sources by kind

    @classmethod
    def of(cls, briefing: Briefing) -> _Counted:
        kinds = Counter[str](s.duplicate_kind or "exact" for s in briefing.sources if s.status == "duplicate")
        return cls(len(briefing.sources), kinds)
