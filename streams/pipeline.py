"""What the agents do with each record: call processors, hand results to sinks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from processors.briefing import assemble_briefing, cited_ids_of, max_d_number
from processors.models import Briefing, ControlCommand, RawFile
from processors.naming import briefing_basename
from processors.render_markdown import render_markdown
from processors.routing import DocumentEvent, rejection_reason_label, route_raw
from processors.window import window_bounds
from sinks.files import BriefingFiles
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.settings import Settings

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Pipeline:
    """The stateful side of one worker: DuckDB state, briefing files and metrics."""

    def __init__(
        self,
        settings: Settings,
        state: StateStore,
        metrics: Metrics,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.settings = settings
        self.state = state
        self.metrics = metrics
        self.files = BriefingFiles(settings.out_dir)
        self.clock = clock

    def route(self, raw: RawFile) -> list[DocumentEvent]:
        events = route_raw(
            raw,
            self.settings.axes,
            zone=self.settings.tz,
            max_bytes=self.settings.max_bytes,
            seen_at=self.clock(),
        )
        for ev in events:
            if ev.type == "rejection":
                log.warning("rejected %s: %s", ev.path, ev.reason)
                self.metrics.documents_rejected.labels(reason=rejection_reason_label(ev.reason or "")).inc()
        if not events:
            log.info("%s matches no configured axis; not stored", raw.path)
        return events

    def store(self, event: DocumentEvent) -> None:
        if event.type == "document" and event.document is not None and event.axis:
            if self.state.put_document(event.axis, event.document):
                self.metrics.documents_stored.labels(axis=event.axis, kind=event.document.kind).inc()
                log.info("stored %s for axis %s", event.path, event.axis)
        elif event.type == "deletion" and event.axis:
            self.state.delete_path(event.axis, event.path, event.seen_at)
        elif event.type == "rejection":
            from processors.models import Rejection

            self.state.put_rejection(
                Rejection(path=event.path, reason=event.reason or "rejected"), event.sha256, event.seen_at
            )

    def brief(self, command: ControlCommand) -> Briefing | None:
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
        earlier = self.state.earlier_briefings(axis.name, command.end)
        earlier_ids: set[str] = set()
        for b in earlier:
            earlier_ids |= cited_ids_of(b)
        baseline_texts = [d.text for d in documents if d.kind == "baseline"]
        last_d = max(
            [max_d_number(baseline_texts)] + [max_d_number(d.id for d in b.discrepancies) for b in earlier]
        )
        briefing = assemble_briefing(
            axis=axis,
            trigger=command.trigger,
            window=window,
            generated_at=self.clock(),
            documents=documents,
            living=self.state.living_document(axis.name),
            earlier_cited_ids=earlier_ids,
            superseded=self.state.superseded_documents(axis.name, window),
            rejected=self.state.rejections(window),
            increment_range=(self.settings.increment_min, self.settings.increment_max),
            last_d_number=last_d,
            zone=self.settings.tz,
            near_duplicate_threshold=self.settings.near_duplicate_threshold,
        )
        basename = briefing_basename(axis.name, command.end, command.trigger, self.settings.tz)
        markdown = render_markdown(briefing, lang=self.settings.lang, zone=self.settings.tz)
        md, _ = self.files.write(briefing, basename, markdown)
        self.state.record_emission(briefing, basename)
        self.metrics.briefings_emitted.labels(axis=axis.name, trigger=command.trigger).inc()
        self.metrics.last_briefing.labels(axis=axis.name).set(self.clock().timestamp())
        self.metrics.window_documents.labels(axis=axis.name).set(len(documents))
        for s in briefing.sources:
            if s.status == "duplicate":
                self.metrics.duplicates.labels(axis=axis.name, kind=s.duplicate_kind or "exact").inc()
        log.info(
            "emitted briefing %s (%d sources, %d increments)",
            md,
            len(briefing.sources),
            len(briefing.increments),
        )
        return briefing
