"""What the agents do with each record: call processors, hand results to sinks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from processors.arxiv_atom import EnrichedId
from processors.briefing import assemble_briefing, cited_ids_of, max_d_number
from processors.models import AxisSpec, Briefing, ControlCommand, Document, RawFile, Rejection, Trigger
from processors.naming import briefing_basename
from processors.render_markdown import render_markdown
from processors.routing import (
    DocumentEvent,
    rejection_reason_label,
    route_raw,
    warning_reason_label,
)
from processors.window import window_bounds
from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient
from sinks.enrichment import Enricher
from sinks.files import BriefingFiles
from sinks.metrics import Metrics
from sinks.state import EmissionRecord, Position, StateStore
from streams.kafka_io import MAX_MESSAGE_BYTES
from streams.logs import doc_context
from streams.settings import Settings

log = logging.getLogger(__name__)

USER_AGENT = "predigest/0.1 (E1 pre-digest briefings; arXiv id metadata)"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def make_enricher(settings: Settings, metrics: Metrics) -> Enricher:
    """The worker's arXiv enricher: its cache always, the API only when `arxiv.enabled`."""
    arxiv = settings.arxiv
    cache = ArxivCache(settings.arxiv_cache_file, negative_ttl=timedelta(hours=arxiv.negative_ttl_hours))
    client = None
    if arxiv.enabled:
        http = httpx.AsyncClient(headers={"User-Agent": USER_AGENT}, follow_redirects=True)
        client = ArxivClient(
            http,
            base_url=arxiv.base_url,
            batch_size=arxiv.batch_size,
            min_interval_seconds=arxiv.min_interval_seconds,
            timeout_seconds=arxiv.timeout_seconds,
            max_retries=arxiv.max_retries,
            backoff_seconds=arxiv.backoff_seconds,
            metrics=metrics,
        )
    return Enricher(cache, client, metrics)


@dataclass(frozen=True)
class Emission:
    """A recorded briefing as the control agent sends it: the recorded JSON, byte for byte."""

    axis: str
    window_end: datetime
    trigger: Trigger
    basename: str
    briefing_json: str
    delivered: bool  # the briefing topic already acknowledged it: nothing to send

    @property
    def briefing(self) -> Briefing:
        return Briefing.model_validate_json(self.briefing_json)


class Pipeline:
    """The stateful side of one worker: DuckDB state, briefing files and metrics."""

    def __init__(
        self,
        settings: Settings,
        state: StateStore,
        metrics: Metrics,
        clock: Callable[[], datetime] = _utcnow,
        enricher: Enricher | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.metrics = metrics
        self.files = BriefingFiles(settings.out_dir)
        self.clock = clock
        self.enricher = enricher

    def route(self, raw: RawFile, raw_offset: int | None = None) -> list[DocumentEvent]:
        """The events a raw file becomes; a bug in routing turns the file into a rejection, never a crash."""
        seen_at = self.clock()
        try:
            events = route_raw(
                raw,
                self.settings.axes,
                zone=self.settings.tz,
                max_bytes=self.settings.max_bytes,
                seen_at=seen_at,
                raw_offset=raw_offset,
            )
        except Exception as exc:
            log.exception("routing %s failed; recorded as rejected", raw.path, extra=doc_context(raw.path))
            reason = f"{raw.path}: could not be routed ({exc})"
            events = self._rejections(raw.path, raw.sha256, seen_at, reason, raw_offset)
        rejected = next((ev for ev in events if ev.type == "rejection"), None)
        if rejected is not None:  # one event per axis, one rejection of the file
            label = rejection_reason_label(rejected.reason or "", rejected.path)
            if raw.refused:
                log.info(
                    "%s was refused by the watcher (%s); listed as rejected",
                    raw.path,
                    label,
                    extra=doc_context(raw.path),
                )
            else:  # the watcher counted its own refusals already
                log.warning(
                    "rejected %s (%s): %s", raw.path, label, rejected.reason, extra=doc_context(raw.path)
                )
                self.metrics.documents_rejected.labels(reason=label).inc()
        docs = [ev.document for ev in events if ev.document is not None]
        if docs and docs[0].warnings:
            for warning in docs[0].warnings:
                self.metrics.documents_warned.labels(reason=warning_reason_label(warning)).inc()
            log.warning(
                "kept %s with warnings: %s",
                raw.path,
                "; ".join(docs[0].warnings),
                extra=doc_context(raw.path),
            )
        if not events:
            log.info("%s matches no configured axis; not stored", raw.path, extra=doc_context(raw.path))
        return events

    def _rejections(
        self, path: str, sha256: str, seen_at: datetime, reason: str, raw_offset: int | None
    ) -> list[DocumentEvent]:
        # Every axis lists the window's rejections, and each axis may live on another worker.
        return [
            DocumentEvent(
                type="rejection",
                path=path,
                sha256=sha256,
                seen_at=seen_at,
                axis=a.name,
                reason=reason,
                raw_offset=raw_offset,
            )
            for a in self.settings.axes
        ]

    def encode(self, events: list[DocumentEvent]) -> list[tuple[bytes, bytes]]:
        """(key, value) records for `predigest.documents`; a document too big for a message becomes a rejection."""
        out: list[tuple[bytes, bytes]] = []
        too_big: DocumentEvent | None = None
        for ev in events:
            value = ev.model_dump_json().encode()
            if len(value) > MAX_MESSAGE_BYTES - 64 * 1024:  # headroom for the key and the batch header
                too_big = too_big or ev
                continue
            out.append((ev.key.encode(), value))
        if too_big is not None:
            reason = (
                f"{too_big.path}: parsed document is over the message limit of {MAX_MESSAGE_BYTES} bytes; "
                "split the file"
            )
            log.warning("rejected %s (limit): %s", too_big.path, reason, extra=doc_context(too_big.path))
            self.metrics.documents_rejected.labels(reason="limit").inc()
            rejections = self._rejections(
                too_big.path, too_big.sha256, too_big.seen_at, reason, too_big.raw_offset
            )
            out = [
                r for r in out if r[0] not in {ev.key.encode() for ev in events if ev.path == too_big.path}
            ]
            out.extend((r.key.encode(), r.model_dump_json().encode()) for r in rejections)
        return out

    def store(
        self, event: DocumentEvent, position: Position | None = None, *, replaying: bool = False
    ) -> bool:
        """Apply one documents record to the state; True if it changed what a briefing sees."""
        ctx = doc_context(event.path, event.axis, position)
        if event.type == "document" and event.document is not None and event.axis:
            with self.metrics.duckdb_write.labels(operation="document").time():
                stored = self.state.put_document(
                    event.axis, event.document, raw_offset=event.raw_offset, position=position
                )
            if stored:
                self.metrics.documents_stored.labels(axis=event.axis, kind=event.document.kind).inc()
                if event.mtime is not None and not replaying:
                    self.metrics.end_to_end_lag.observe(max(0.0, self.clock().timestamp() - event.mtime))
                # A replay after a takeover stores thousands: those lines are for debugging only.
                log.log(
                    logging.DEBUG if replaying else logging.INFO,
                    "stored %s for axis %s",
                    event.path,
                    event.axis,
                    extra=ctx,
                )
            return stored
        if event.type == "deletion" and event.axis:
            with self.metrics.duckdb_write.labels(operation="deletion").time():
                deleted = self.state.delete_path(
                    event.axis, event.path, event.seen_at, raw_offset=event.raw_offset, position=position
                )
            if deleted:
                level = logging.DEBUG if replaying else logging.INFO
                log.log(level, "deleted %s from axis %s", event.path, event.axis, extra=ctx)
            return deleted
        if event.type == "rejection":
            with self.metrics.duckdb_write.labels(operation="rejection").time():
                self.state.put_rejection(
                    Rejection(path=event.path, reason=event.reason or "rejected"),
                    event.sha256,
                    event.seen_at,
                    position=position,
                )
            return True
        if position is not None:
            self.state.mark_applied(position)
        return False

    async def _arxiv_records(self, documents: list[Document]) -> Mapping[str, EnrichedId]:
        """arXiv metadata for the window's ids; whatever goes wrong, the briefing falls back to the documents."""
        ids = list(dict.fromkeys(i for d in documents if d.kind != "living" for i in d.arxiv_ids))
        if self.enricher is None or not ids:
            return {}
        try:
            return await self.enricher.enrich(ids)
        except Exception:
            # Enrichment is an extra: a bug in it must not cost the operator the briefing.
            log.exception("arXiv enrichment failed; the %d id(s) keep their document titles", len(ids))
            return {}

    async def brief(self, command: ControlCommand) -> Emission | None:
        """The emission a command asks for, once per (axis, window end, trigger).

        Recorded first, then written from the record: a crash anywhere in between is repaired by the
        replayed command with the same bytes. Returns None for an unknown axis.
        """
        axis = self.settings.axis(command.axis)
        if axis is None:
            log.warning(
                "command for unknown axis %r ignored; configured: %s",
                command.axis,
                [a.name for a in self.settings.axes],
            )
            return None
        record = self.state.emission_record(axis.name, command.end, command.trigger)
        fresh = record is None
        if record is None:
            briefing, documents = await self._assemble(axis, command)
            basename = briefing_basename(axis.name, command.end, command.trigger, self.settings.tz)
            markdown = await asyncio.to_thread(
                render_markdown, briefing, lang=self.settings.lang, zone=self.settings.tz
            )
            with self.metrics.duckdb_write.labels(operation="emission").time():
                self.state.record_emission(briefing, basename, markdown, emitted_at=self.clock())
            record = self.state.emission_record(axis.name, command.end, command.trigger)
            assert record is not None, "an emission just recorded must be readable"
            self._count_emission(briefing, len(documents))
        else:
            log.info(
                "briefing for %s ending %s (%s) already emitted; nothing new%s",
                axis.name,
                command.end.isoformat(),
                command.trigger,
                "" if record.delivered else " (re-sending the recorded one: it was never acknowledged)",
            )
            self.metrics.briefings_repeated.labels(axis=axis.name, trigger=command.trigger).inc()
        written = self._write_files(axis.name, record)
        if written and not fresh:
            log.warning("restored missing briefing file(s) from the record: %s", [str(p) for p in written])
        return Emission(
            axis=axis.name,
            window_end=command.end,
            trigger=command.trigger,
            basename=record.basename,
            briefing_json=record.briefing_json,
            delivered=record.delivered,
        )

    def delivered(self, emission: Emission) -> None:
        """The briefing topic acknowledged the emission: a repeated command will send nothing."""
        self.state.mark_delivered(emission.axis, emission.window_end, emission.trigger, self.clock())

    def _write_files(self, axis: str, record: EmissionRecord) -> list[Path]:
        markdown = record.markdown
        if markdown is None:  # recorded before the Markdown was kept: render it from the recorded JSON
            markdown = render_markdown(
                Briefing.model_validate_json(record.briefing_json),
                lang=self.settings.lang,
                zone=self.settings.tz,
            )
        return self.files.ensure(axis, record.basename, record.briefing_json, markdown)

    def _count_emission(self, briefing: Briefing, window_documents: int) -> None:
        axis = briefing.axis
        self.metrics.briefings_emitted.labels(axis=axis, trigger=briefing.trigger).inc()
        self.metrics.last_briefing.labels(axis=axis).set(self.clock().timestamp())
        self.metrics.window_documents.labels(axis=axis).set(window_documents)
        for s in briefing.sources:
            if s.status == "duplicate":
                self.metrics.duplicates.labels(axis=axis, kind=s.duplicate_kind or "exact").inc()
        log.info(
            "emitted briefing %s ending %s (%s; %d sources, %d increments, %d of %d arXiv ids verified)",
            axis,
            briefing.window.end.isoformat(),
            briefing.trigger,
            len(briefing.sources),
            len(briefing.increments),
            sum(1 for a in briefing.arxiv if a.metadata.source != "document"),
            len(briefing.arxiv),
        )

    async def _assemble(self, axis: AxisSpec, command: ControlCommand) -> tuple[Briefing, list[Document]]:
        """The briefing of the window ending at the command's end, from the current state."""
        window = window_bounds(command.end, self.settings.window_length)
        documents = self.state.window_documents(axis.name, window)
        # Yesterday's briefing is usually stamped with its date only (00:00), before the window opens.
        baseline = self.state.latest_baseline(
            axis.name, window.start, window.start - self.settings.window_length
        )
        if baseline is not None:
            documents.append(baseline)
        earlier = self.state.earlier_briefings(axis.name, command.end)
        earlier_ids: set[str] = set()
        for b in earlier:
            earlier_ids |= cited_ids_of(b)
        baseline_texts = [d.text for d in documents if d.kind == "baseline" and d.baseline_axis == axis.name]
        last_d = max(
            [max_d_number(baseline_texts)] + [max_d_number(d.id for d in b.discrepancies) for b in earlier]
        )
        arxiv_records = await self._arxiv_records(documents)
        # In a thread: a window of large notes takes seconds (about 10 s per MB of text), and the event loop
        # must keep heartbeating to the consumer group meanwhile, or the worker is evicted mid-briefing.
        briefing = await asyncio.to_thread(
            assemble_briefing,
            axis=axis,
            trigger=command.trigger,
            window=window,
            generated_at=self.clock(),
            documents=documents,
            living=self.state.living_document(axis.name),
            axes=self.settings.axes,
            other_living={
                a.name: self.state.living_document(a.name) for a in self.settings.axes if a != axis
            },
            earlier_cited_ids=earlier_ids,
            superseded=self.state.superseded_documents(axis.name, window),
            rejected=self.state.rejections(window),
            increment_range=(self.settings.increment_min, self.settings.increment_max),
            last_d_number=last_d,
            zone=self.settings.tz,
            lang=self.settings.lang,
            rules=self.settings.rules,
            arxiv_records=arxiv_records,
            near_duplicate_threshold=self.settings.near_duplicate_threshold,
        )
        return briefing, documents
