"""Replay retained topics into the state: documents partitions and the briefings topic, from the last applied offset.

A plain consumer outside the group reads each partition from the offset after the one the state last applied
(the log start when none) up to the end offset seen when the replay starts. It never depends on the group's
committed offset, so a fresh worker, a takeover and a deleted state file all rebuild the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from processors.briefing_names import briefing_basename
from processors.briefing_parts import Headers, Joiner, PartError
from processors.models import Briefing
from processors.wire import DocumentRecord, decode_notes
from sinks.clock import Clock
from sinks.state import Position, StateStore
from sinks.unreadable import Unreadable
from streams import kafka_io
from streams.logs import doc_context
from streams.pipeline import Pipeline
from streams.settings import Settings

log = logging.getLogger(__name__)
# Why a rebuilt state lacks a living document: the replay stores what the topic holds, a damaged body as it came.
_NEVER_SENT = "never published, or older than the documents topic's retention"
_DAMAGED = "is stored, but its text is damaged and cannot be read: edit the file"

Progress = Callable[[str, int, int, int], None]  # topic, partition, records done, records to do
Fetched = tuple[Position, bytes | None, Headers]
Apply = Callable[[list[Fetched]], None]  # one fetched batch of one partition


# Per partition and fetch, as the worker's own consumer (streams/app.py). Each fetch is applied as one batch: at
# MAX_MESSAGE_BYTES a fetch was half of a 10k backlog (~4 600 notes) and the worker replaying it peaked at ~800
# MiB. A record larger than this still comes whole (the broker returns a partition's first batch, KIP-74).
FETCH_BYTES = 1024 * 1024


def _consumer(settings: Settings) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        **kafka_io.client_kwargs(settings),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=FETCH_BYTES,
        fetch_max_bytes=4 * FETCH_BYTES,
    )


async def _replay(
    settings: Settings,
    state: StateStore,
    topic: str,
    partitions: Iterable[int],
    apply: Apply,
    progress: Progress | None,
) -> int:
    """Feed every record after the state's applied offset, up to today's end, to `apply`; how many."""
    tps = [TopicPartition(topic, p) for p in sorted(set(partitions))]
    if not tps:
        return 0
    consumer = _consumer(settings)
    await kafka_io.start_client(settings, consumer)
    try:
        consumer.assign(tps)
        ends: dict[Any, int] = await consumer.end_offsets(tps)
        starts: dict[Any, int] = await consumer.beginning_offsets(tps)
        todo: dict[TopicPartition, int] = {}
        for tp in tps:
            applied = state.applied_offset(topic, tp.partition)
            first = 0 if applied is None else applied + 1
            if first < starts[tp]:
                if applied is not None:
                    log.warning(
                        "%s[%d]: records %d..%d expired before this state applied them (retention); "
                        "replaying from %d",
                        topic,
                        tp.partition,
                        first,
                        starts[tp] - 1,
                        starts[tp],
                    )
                first = starts[tp]
            if first < ends[tp]:
                consumer.seek(tp, first)
                todo[tp] = first
        done = dict.fromkeys(todo, 0)
        count = 0
        while todo:
            batch = await consumer.getmany(*todo, timeout_ms=1000)
            for tp, records in batch.items():
                wanted = [
                    (Position(topic, tp.partition, r.offset), r.value, list(r.headers))
                    for r in records
                    if r.offset < ends[tp]
                ]
                apply(wanted)
                done[tp] += len(wanted)
                count += len(wanted)
                if progress is not None and tp in todo:
                    progress(topic, tp.partition, done[tp], ends[tp] - todo[tp])
            for tp in list(todo):
                if await consumer.position(tp) >= ends[tp]:
                    del todo[tp]
        return count
    finally:
        await consumer.stop()


async def replay_documents(
    settings: Settings,
    pipeline: Pipeline,
    partitions: Iterable[int],
    progress: Progress | None = None,
    new_from: Mapping[int, int] | None = None,
) -> int:
    """Apply the documents partitions' records this state does not hold yet; how many were read.
    `new_from`: the group's committed offset per partition, from which records are new to every worker."""

    def apply(batch: list[Fetched]) -> None:
        items: list[tuple[DocumentRecord, Position]] = []
        for position, value, _ in batch:
            try:
                notes = decode_notes(value or b"")
            except ValueError as exc:
                # The live agent skips it as well; skipping keeps every other record of the partition.
                # Counted by the live agent, which meets it too (or did, on the earlier owner).
                log.error("%s[%d]@%d is not a documents record, skipped: %s", *_where(position), exc)
                continue
            for note in notes.failed:  # the live agent dead-lettered it alone (the record's other notes stay)
                log.error(
                    "%s[%d]@%d: note %d does not read, skipped: %s", *_where(position), note.index, note.error
                )
            items.extend((row, position.at_row(i)) for i, row in enumerate(notes.rows))
        # Records from the group's committed offset on were never applied by any worker: logged and timed
        # (end-to-end lag) as the live agent would; the ones below replay what an earlier owner held.
        for first_time in (False, True):
            part = [
                (r, p)
                for r, p in items
                if (new_from is not None and p.offset >= new_from.get(p.partition, 0)) == first_time
            ]
            pipeline.store_batch(part, replaying=not first_time)
        if batch:
            pipeline.state.mark_applied(batch[-1][0])  # a trailing unreadable record is not replayed again

    topic = settings.kafka.topic("documents")
    return await _replay(settings, pipeline.state, topic, partitions, apply, progress)


async def replay_briefings(settings: Settings, state: StateStore, progress: Progress | None = None) -> int:
    """Record every briefing on `predigest.briefings` as emitted, so "already emitted" survives a takeover;
    how many the state did not hold yet (a briefing sent in parts counts once)."""
    topic = settings.kafka.topic("briefings")

    joiners: dict[int, Joiner] = {}  # per partition: a briefing over the message limit comes in parts
    restored = 0

    def apply(batch: list[Fetched]) -> None:
        nonlocal restored
        for position, value, headers in batch:
            joiner = joiners.setdefault(position.partition, Joiner())
            briefing: Briefing | None = None
            try:
                joined = joiner.feed(position.offset, value or b"", headers)
                if joined is not None:
                    briefing = Briefing.model_validate_json(joined.value)
            except (ValidationError, PartError) as exc:
                log.error("%s[%d]@%d is not a briefing, skipped: %s", *_where(position), exc)
            # The offset stays before a briefing still being joined, so a replay cut short reads all its parts.
            settled = position if joiner.oldest_open() is None else None
            if briefing is None:
                if settled is not None:
                    state.mark_applied(settled)
                continue
            basename = briefing_basename(briefing.axis, briefing.window.end, briefing.trigger, settings.tz)
            if state.restore_emission(briefing, basename, settled):
                restored += 1
                log.debug(
                    "restored emission %s", basename, extra=doc_context(basename, briefing.axis, position)
                )

    partitions = await kafka_io.partition_numbers(settings, topic)
    await _replay(settings, state, topic, partitions, apply, progress)
    return restored


class ReplayProgress:
    """Logs a line per partition at most every `every_seconds`, and when it completes."""

    def __init__(self, clock: Clock, every_seconds: float) -> None:
        self._clock = clock
        self._every = every_seconds
        self._last: dict[tuple[str, int], float] = {}

    def __call__(self, topic: str, partition: int, done: int, todo: int) -> None:
        now = self._clock.monotonic()
        key = (topic, partition)
        if done == todo or now - self._last.get(key, 0.0) >= self._every:
            self._last[key] = now
            pct = 100.0 * done / todo if todo else 100.0
            log.info("replaying %s[%d]: %d/%d record(s) (%.0f%%)", topic, partition, done, todo, pct)


def warn_missing_living(settings: Settings, state: StateStore, axes: Iterable[str]) -> None:
    """Log the axes whose configured living document the state lacks after a replay, or holds damaged."""
    wanted = {a: s.living_doc for a in axes if (s := settings.axis(a)) is not None and s.living_doc}
    unreadable = Unreadable()  # its WARNING names the note; the rebuild's replay counts no briefing's read
    for name, doc in state.living_documents(list(wanted), unreadable).items() if wanted else ():
        if doc is None:
            damaged = wanted[name] in {r.path for r in unreadable.of(name)}
            log.warning(
                "axis %s has no living document in its state (%s %s): its briefings lack living-document context "
                "until the file changes",
                name,
                wanted[name],
                _DAMAGED if damaged else _NEVER_SENT,
                extra=doc_context(wanted[name], name),
            )


def _where(position: Position) -> tuple[str, int, int]:
    return position.topic, position.partition, position.offset
