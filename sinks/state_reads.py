"""The worker state's reads, each answered by the sink that holds it (the facade's other half: sinks/state.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from processors.models import Briefing, Document, Rejection, Trigger, WindowBounds
from sinks.counts import Counts
from sinks.documents import Documents
from sinks.emissions import EmissionRecord, Emissions
from sinks.offsets import AppliedOffsets


class StateReads:
    """Reads of the state's sinks, which StateStore opens (and opens again after a reopen)."""

    offsets: AppliedOffsets
    docs: Documents
    emissions: Emissions
    counts: Counts

    def applied_offset(self, topic: str, partition: int) -> int | None:
        return self.offsets.get(topic, partition)

    def latest_baseline(self, axis: str, before: datetime, since: datetime) -> Document | None:
        return self.docs.latest_baseline(axis, before, since)

    def living_document(self, axis: str) -> Document | None:
        return self.docs.living_document(axis)

    def living_documents(self, axes: Sequence[str]) -> dict[str, Document | None]:
        return self.docs.living_documents(axes)

    def rejections(self, window: WindowBounds) -> list[Rejection]:
        return self.docs.rejections(window)

    def emission(self, axis: str, window_end: datetime, trigger: str) -> Briefing | None:
        return self.emissions.briefing(axis, window_end, trigger)

    def emission_record(self, axis: str, window_end: datetime, trigger: str) -> EmissionRecord | None:
        return self.emissions.record_of(axis, window_end, trigger)

    def undelivered_emissions(self) -> list[tuple[str, datetime, Trigger]]:
        return self.emissions.undelivered()

    def earlier_briefings(self, axis: str, before: datetime) -> list[Briefing]:
        return self.emissions.earlier(axis, before)

    def latest_emission(self, axis: str) -> Briefing | None:
        return self.emissions.latest(axis)

    def last_close_end(self, axis: str) -> datetime | None:
        return self.emissions.last_close_end(axis)

    def last_emitted_at(self, axis: str) -> datetime | None:
        return self.emissions.last_emitted_at(axis)

    def document_count(self, axis: str | None = None) -> int:
        return self.counts.document_count(axis)

    def window_document_count(self, axis: str, window: WindowBounds) -> int:
        return self.counts.window_document_count(axis, window)

    def axis_summary(self, axis: str) -> dict[str, int]:
        return self.counts.axis_summary(axis)
