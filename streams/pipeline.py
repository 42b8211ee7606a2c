"""What the agents do with each record: call processors, hand results to sinks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

import httpx

from processors.arxiv_atom import EnrichedId
from processors.briefing import assemble_briefing, cited_ids_of, max_d_number
from processors.models import Briefing, ControlCommand, Document, RawFile, Rejection
from processors.naming import briefing_basename
from processors.render_markdown import render_markdown
from processors.routing import DocumentEvent, rejection_reason_label, route_raw
from processors.window import window_bounds
from sinks.arxiv_cache import ArxivCache
from sinks.arxiv_client import ArxivClient
from sinks.enrichment import Enricher
from sinks.files import BriefingFiles
from sinks.metrics import Metrics
from sinks.state import Position, StateStore
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
        events = route_raw(
            raw,
            self.settings.axes,
            zone=self.settings.tz,
            max_bytes=self.settings.max_bytes,
            seen_at=self.clock(),
            raw_offset=raw_offset,
        )
        rejected = next((ev for ev in events if ev.type == "rejection"), None)
        if rejected is not None:  # one event per axis, one rejection of the file
            log.warning("rejected %s: %s", raw.path, rejected.reason, extra=doc_context(raw.path))
            self.metrics.documents_rejected.labels(reason=rejection_reason_label(rejected.reason or "")).inc()
        if not events:
            log.info("%s matches no configured axis; not stored", raw.path, extra=doc_context(raw.path))
        return events

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

    async def brief(self, command: ControlCommand) -> Briefing | None:
        """Emit the briefing a command asks for, once per (axis, window end, trigger)."""
        axis = self.settings.axis(command.axis)
        if axis is None:
            log.warning(
                "command for unknown axis %r ignored; configured: %s",
                command.axis,
                [a.name for a in self.settings.axes],
            )
            return None
        if self.state.emission(axis.name, command.end, command.trigger) is not None:
            log.info(
                "briefing for %s ending %s (%s) already emitted; nothing new",
                axis.name,
                command.end.isoformat(),
                command.trigger,
            )
            self.metrics.briefings_repeated.labels(axis=axis.name, trigger=command.trigger).inc()
            return None
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
        briefing = assemble_briefing(
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
        basename = briefing_basename(axis.name, command.end, command.trigger, self.settings.tz)
        markdown = render_markdown(briefing, lang=self.settings.lang, zone=self.settings.tz)
        md, _ = self.files.write(briefing, basename, markdown)
        with self.metrics.duckdb_write.labels(operation="emission").time():
            self.state.record_emission(briefing, basename)
        self.metrics.briefings_emitted.labels(axis=axis.name, trigger=command.trigger).inc()
        self.metrics.last_briefing.labels(axis=axis.name).set(self.clock().timestamp())
        self.metrics.window_documents.labels(axis=axis.name).set(len(documents))
        for s in briefing.sources:
            if s.status == "duplicate":
                self.metrics.duplicates.labels(axis=axis.name, kind=s.duplicate_kind or "exact").inc()
        log.info(
            "emitted briefing %s (%d sources, %d increments, %d of %d arXiv ids verified)",
            md,
            len(briefing.sources),
            len(briefing.increments),
            sum(1 for a in briefing.arxiv if a.metadata.source != "document"),
            len(briefing.arxiv),
        )
        return briefing
