"""`predigest rebuild`: stop-the-world rebuild of a worker's state from the retained topics.

The worker must be stopped (DuckDB allows one writer per file, so a running worker makes this fail).
The old file is set aside, never deleted (as `unreadable-<UTC>` when it is damaged, `rebuild-<UTC>` otherwise);
every documents partition and the briefings topic are replayed,
so the rebuilt state can take over any axis when the worker starts again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sinks.clock import Clock
from sinks.metrics import Metrics
from sinks.state import StateStore
from sinks.state_files import set_aside_to_rebuild
from streams import kafka_io
from streams.pipeline import Pipeline
from streams.replay import ReplayProgress, replay_briefings, replay_documents, warn_missing_living
from streams.services import state_limits
from streams.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rebuilt:
    documents_records: int
    briefings: int  # restored whole, however many parts each was sent in
    documents: int  # current document versions held afterwards


async def rebuild(settings: Settings, clock: Clock) -> Rebuilt:
    """Set the state file aside and replay the topics into a fresh one."""
    path = settings.state_file
    # Fails with StateLockedError while a worker holds the file; a WAL it replays is replayed within the limits.
    aside = set_aside_to_rebuild(path, clock.now(), state_limits(settings))
    if aside is not None:
        log.info("old state set aside as %s (delete it once the rebuilt state looks right)", aside)
    state = StateStore(path, state_limits(settings))
    try:
        pipeline = Pipeline(settings, state, Metrics(), clock)
        progress = ReplayProgress(clock, every_seconds=2.0)
        partitions = await kafka_io.partition_numbers(settings, settings.kafka.topic("documents"))
        log.info("replaying %s, partitions %s", settings.kafka.topic("documents"), partitions)
        docs = await replay_documents(settings, pipeline, partitions, progress)
        log.info("replaying %s", settings.kafka.topic("briefings"))
        briefings = await replay_briefings(settings, state, progress)
        warn_missing_living(settings, state, (a.name for a in settings.axes))
        return Rebuilt(docs, briefings, state.document_count())
    finally:
        state.close()
