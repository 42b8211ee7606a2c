"""The worker's agents: parse (raw → documents), window (documents → state), control (commands → briefings).

Each agent is a loop over its stream that hands a batch, or a command, to a handler here; the handlers call the
processors through the Pipeline and hand the results to the state, the metrics and the topics (`Outputs`).

Commit safety (docs/guarantees.md): concurrency stays 1, since with more Faust can commit past an
unfinished message (faust-streaming #606). The window agent (`take_batches`: Faust's `take_events`, growing
its batches while a backlog waits) acks a batch's records itself once they are stored, one batch stored at a
time and in order, while it decodes the next (streams.window_flow); the parse agent acks a batch's raw records
itself once every documents record of it is acknowledged, while it routes the next batches (streams.parse_flow),
and in offset order: Faust's commit does not reliably stop at a gap of unacked offsets (`ack_all`).
A step that raises would still be acked, so each one runs under must_finish (retry, else exit without
acking); a batch's task, or an agent's loop, that fails otherwise stops the worker at once too (`Services.halt`).
A command's answer that keeps failing is dead-lettered instead, unless nothing could be briefed
(streams.command_failures): a restart would meet it again and stall every axis. Its send to the briefings topic is
not: it runs under must_finish of its own (a broker outage never dead-letters a good command).
A record a stage cannot read or process goes to the dead-letter topic, acknowledged before its batch is
(streams.dead_letters).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import NamedTuple, TypeVar

import faust
from faust.streams import Stream
from faust.types import AgentT, EventT

from processors.commands import check_command
from processors.dead_letters import DeadLetter, Failure, Stage
from processors.errors import unpanicked
from processors.models import ControlCommand
from processors.parse_stage import Routed, documents_records
from processors.wire import DocumentRecord, Notes, batch_weight, decode_notes
from sinks import collector
from sinks.state import Position
from streams import outbox_wait, parse_flow, window_flow
from streams.batches import (
    BACKLOG_RECORDS,
    ack_all,
    each_then_acked,
    nothing_behind,
    records_behind,
    take_batches,
    weighed_behind,
)
from streams.command_failures import answer_or_fail, failure_of
from streams.dead_letters import Origin, origin_of, routing_failure
from streams.emission import Emission
from streams.failstop import must_finish, stop_unless_stopping, to_thread_to_the_end
from streams.heap import briefing_heap
from streams.services import Services
from streams.topics import Outputs, Topics

log = logging.getLogger(__name__)
T = TypeVar("T")


class Agents(NamedTuple):
    """The registered agents; `test_context()` on each drives it in process, without a broker."""

    parse: AgentT[bytes]
    window: AgentT[bytes]
    control: AgentT[bytes]


def register_agents(app: faust.App, topics: Topics, services: Services, outputs: Outputs) -> Agents:
    """Declare the three agents on their topics, each with concurrency 1 (Faust's default: see the module)."""
    return Agents(
        parse=app.agent(topics.raw, name="streams.agents.parse")(partial(parse_agent, services, outputs)),
        window=app.agent(topics.documents, name="streams.agents.window")(
            partial(window_agent, services, outputs)
        ),
        control=app.agent(topics.control, name="streams.agents.control")(
            partial(control_agent, services, outputs)
        ),
    )


def _decoded(
    services: Services, parse: Callable[[bytes], T], value: bytes | None, stage: Stage
) -> tuple[T | None, Failure | None]:
    try:
        return parse(value or b""), None
    except ValueError as exc:  # pydantic's ValidationError is one
        services.pipeline().unreadable(stage, str(exc))
        return None, Failure("unreadable", str(exc))


def _position(event: EventT[bytes]) -> Position:
    return Position(event.message.topic, event.message.partition, event.message.offset)


async def _dead_letters(
    services: Services,
    outputs: Outputs,
    stage: Stage,
    outcomes: Sequence[tuple[Origin, Failure | None]],
    cause: BaseException | None = None,
) -> None:
    """Sort a batch's outcomes (the worker stops here on its dead-letter limit, logging `cause`'s traceback), then
    send its dead letters."""
    letters: list[DeadLetter] = services.dead.sort(stage, outcomes, cause)
    if letters:
        await must_finish(
            partial(services.dead.send, outputs, letters),
            f"sending {len(letters)} record(s) to the dead-letter topic",
            stop=services.halt,
        )


async def parse_agent(services: Services, outputs: Outputs, stream: Stream[bytes]) -> None:
    try:
        await services.parser.start()
    except Exception:  # the first batch starts it again, under must_finish
        log.exception("starting the parse processes failed")
        services.parser.close(kill=True)
    s = services.settings
    # Handed over after batch_seconds, as by Faust's take_events: a batch waiting to fill would leave the parse
    # processes idle meanwhile. The loop takes the next batch while this one is routed (streams.parse_flow): its
    # notes are handled, its documents records sent and its raw records acked each after the batch before's,
    # the acks only once every documents record is acknowledged (docs/guarantees.md).
    batches = take_batches(stream, s.batch_records, s.batch_seconds, services.clock, behind=nothing_behind)
    flow: list[parse_flow.Batch] = []
    try:
        async for events in batches:
            batch = parse_flow.Batch()
            work = _parse_forward_ack(services, outputs, stream, events, flow[-1] if flow else None, batch)
            parse_flow.start(flow, work, batch, services.halt)
            flow = await parse_flow.room(flow)
    except BaseException as exc:  # Faust: restarted, acking past this batch; a panic: crashed
        stop_unless_stopping("the parse agent", exc, services.halt)
    finally:
        await parse_flow.stop(flow)


async def _parse_forward_ack(
    services: Services,
    outputs: Outputs,
    stream: Stream[bytes],
    events: Sequence[EventT[bytes]],
    before: parse_flow.Batch | None,
    batch: parse_flow.Batch,
) -> None:
    routed = await route_batch(services, events)
    batch.passed(batch.routed)
    await parse_flow.after(before, before.handled if before else None)
    records = await handle_routed(services, outputs, events, routed)
    batch.passed(batch.handled)
    await parse_flow.after(before, None)  # acked: a retried send never passes a later batch's
    what = f"forwarding {len(records)} record(s) of {len(events)} file(s) to the documents topic"
    await must_finish(partial(outputs.forward, records), what, stop=services.halt)
    await ack_all(stream, events)


async def route_batch(services: Services, events: Sequence[EventT[bytes]]) -> list[Routed]:
    """Route raw records in the parse processes."""
    # The raw offset travels on: it orders the versions of one path (raw is keyed by path).
    values = [(event.value or b"", event.message.offset) for event in events]
    seen_at = services.clock.now()
    return await must_finish(
        partial(services.parser.route, values, seen_at),
        f"parsing {len(values)} raw record(s)",
        stop=services.halt,
    )


async def handle_routed(
    services: Services, outputs: Outputs, events: Sequence[EventT[bytes]], routed: list[Routed]
) -> list[tuple[bytes, bytes]]:
    """Log and count what routing found, send its dead letters; the documents records to forward."""
    pipeline = services.pipeline()
    for r in routed:
        pipeline.note(r)
    outcomes = [(origin_of(e), routing_failure(r)) for e, r in zip(events, routed, strict=True)]
    await _dead_letters(services, outputs, "raw", outcomes)
    # The batch's notes of one partition travel in one record: Kafka and Faust cost per record, not per byte.
    return documents_records(routed, services.parser.params)


async def window_agent(services: Services, outputs: Outputs, stream: Stream[bytes]) -> None:
    s = services.settings
    # Up to batch_records notes a batch (a record holds a parse batch's), acked by its store task once stored.
    batches = take_batches(stream, s.batch_records, s.batch_seconds, services.clock, weight=_weight)
    # Run by the batch buffer's drain as it reads each record: it counts then, while a batch is still handled.
    stream.add_processor(partial(_received, services))
    storing: asyncio.Task[None] | None = None
    try:
        async for events in batches:
            backlog = weighed_behind(records_behind(stream, events), events, _weight) >= BACKLOG_RECORDS
            with services.pipeline().activity.handling():  # until its store takes it; no vacuum meanwhile
                # Beside the batch before's store (mostly DuckDB, without the GIL): the two ran one after the
                # other, and the window agent set the 100k ingest's tail (docs/performance.md).
                decoded = await asyncio.to_thread(_decode_all, [event.value or b"" for event in events])
                if storing is not None:
                    # One batch stored at a time, in order. Its failure stopped the worker when it happened (the
                    # task's callback: a quiet stream brings no next batch); raised here too, never stored past.
                    await storing
                store = partial(window_batch, services, outputs, events, decoded, backlog=backlog)
                storing = window_flow.start(services, stream, events, store)
                # The task holds the batch alone: freed as it ends, not traversed by the idle young collection.
                del decoded, store
    except BaseException as exc:  # Faust: restarted, acking past this batch; a panic: crashed
        stop_unless_stopping("the window agent", exc, services.halt)
    finally:
        if storing is not None:
            await window_flow.stop(storing)


def _received(services: Services, value: bytes) -> bytes:
    """A documents record read from the topic: the state is not quiet (streams.state_vacuum)."""
    if (pipeline := services.pipeline.opened) is not None:  # not opened yet: nothing to vacuum
        pipeline.activity.stirred()
    return value


def _weight(event: EventT[bytes]) -> int:
    return batch_weight(event.value or b"")


async def window_batch(
    services: Services,
    outputs: Outputs,
    events: Sequence[EventT[bytes]],
    decoded: Sequence[Notes | ValueError],
    *,
    backlog: bool = False,
) -> None:
    """Apply a batch of documents records, decoded (`_decode_all`, in a thread: pure, ~0.1 s a batch behind a
    backlog), to the state in one transaction, once their partitions caught up.

    `backlog`: more records wait behind the batch, so its notes are logged as one line, not one each.
    """
    items: list[tuple[DocumentRecord, Position]] = []
    outcomes: list[tuple[Origin, Failure | None]] = []
    for event, notes in zip(events, decoded, strict=True):
        origin = origin_of(event)
        if isinstance(notes, ValueError):
            services.pipeline().unreadable("documents", str(notes))
            outcomes.append((origin, Failure("unreadable", str(notes))))
        else:  # one row per note and axis of the record, stored and claimed together
            outcomes.extend(_note_outcomes(services, origin, notes))
            at = _position(event)
            items.extend((row, at.at_row(i)) for i, row in enumerate(notes.rows))
    await _dead_letters(services, outputs, "documents", outcomes)
    what = f"storing {len(items)} row(s) of {len(events)} record(s) in {services.settings.state_file}"
    await must_finish(partial(store_when_ready, services, items, backlog), what, stop=services.halt)


def _decode_all(values: list[bytes]) -> list[Notes | ValueError]:
    """Each documents record decoded, or why it cannot be (pydantic's ValidationError is a ValueError)."""
    out: list[Notes | ValueError] = []
    # A batch's rows all live until the store: collections here freed nothing, ~15 % of the decode (performance.md).
    with collector.paused():
        for value in values:
            try:
                out.append(unpanicked(decode_notes, value))  # a panic on a hostile record: unreadable
            except ValueError as exc:
                # Its message alone: its traceback held this frame and `out`, a cycle keeping the batch till a
                # collection, rare while batches flow (sinks.collector.FLOWING_YOUNG).
                out.append(ValueError(str(exc)))
    return out


def _note_outcomes(services: Services, origin: Origin, notes: Notes) -> list[tuple[Origin, Failure | None]]:
    """One outcome per note of the record, in order: the dead-letter limits count notes, not records (a record
    of failed notes is no success that resets them). A note that does not read is a dead letter of its own (its
    v4 record, or a one-note v7 record: replayable alone)."""
    failed = {note.index: note for note in notes.failed}
    out: list[tuple[Origin, Failure | None]] = []
    for i in range(notes.count):
        note = failed.get(i)
        if note is None:
            out.append((origin, None))
            continue
        services.pipeline().unreadable("documents", note.error)
        out.append((replace(origin, value=note.value, note=note.index), Failure("unreadable", note.error)))
    return out


async def store_when_ready(
    services: Services, items: list[tuple[DocumentRecord, Position]], backlog: bool = False
) -> None:
    """Store the records of owned partitions once their catch-up is done; the others are not ours to store."""
    ownership = services.ownership
    parts = {position.partition for _, position in items}
    while True:
        # Until the catch-up has replayed a partition, its records wait; a revoke + reassign while waiting
        # brings a new catch-up, so readiness is read again (the state is bound with it, below).
        for p in sorted(parts):
            await ownership.wait_ready(p)
        if not parts & ownership.catching_up():
            break
    ready = [(record, position) for record, position in items if ownership.is_ready(position.partition)]
    # In a thread: the transaction is ~0.5 ms a note, mostly DuckDB's C++ without the GIL, and the event loop
    # meanwhile hands parse results on, fetches, and answers HTTP (docs/performance.md). The state's lock keeps
    # its other users off the connection until the commit (sinks.state_reads.serialised). The state is bound
    # here, with readiness: replaced before the thread runs (a damaged file), the store fails on the closed one
    # and is retried after the new state's catch-up, which would otherwise replay only from after this batch.
    pipeline = services.pipeline()
    store = partial(pipeline.store_batch, ready, backlog=backlog, into=pipeline.state)
    await to_thread_to_the_end(store, f"storing {len(ready)} row(s)")


async def control_agent(services: Services, outputs: Outputs, stream: Stream[bytes]) -> None:
    try:  # a command acked once answered: one a stop cut short is answered after the restart
        async for event in each_then_acked(stream):
            await answer_command(services, outputs, event)
    except BaseException as exc:  # unacked: the worker stops, or a stop's cancellation passes
        stop_unless_stopping("the control agent", exc, services.halt)


async def answer_command(services: Services, outputs: Outputs, event: EventT[bytes]) -> None:
    """Emit the briefing a close or flush command asks for, if this worker owns its axis; dead-letter a command
    that cannot be read, is refused, or whose answer failed every attempt."""
    command, failure = _decoded(services, ControlCommand.model_validate_json, event.value, "control")
    position = _position(event)
    if command is not None:
        # Checked before anything else: a command that cannot be briefed would fail every retry and stop
        # the worker for good (Kafka redelivers it at each restart), so it is refused and dead-lettered.
        refused = check_command(command, services.settings.command_limits, services.clock.now())
        if refused is not None:
            services.pipeline().refuse_command(command, refused, position)
            failure = Failure(refused.reason, refused.detail)
    error = None
    if command is not None and failure is None:
        # Retried, then dead-lettered too (the same restart loop otherwise), unless nothing could be briefed.
        what = f"answering the {command.trigger} of {command.axis} ending {command.end.isoformat()}"
        answer = partial(_answer, services, outputs, command, position)
        error = await answer_or_fail(
            answer,
            what,
            count=lambda: services.pipeline().state.answers(),
            shed=lambda: services.pipeline().state.shed_cache(),
            stop=services.halt,
        )
        failure = None if error is None else failure_of(error)
    await _dead_letters(services, outputs, "control", [(origin_of(event), failure)], error)
    if command is not None and failure is not None and error is not None:  # sent, not stopped by the limit
        services.pipeline().command_failed(command, failure, error, position)


async def _answer(services: Services, outputs: Outputs, command: ControlCommand, position: Position) -> None:
    """Brief the command if this worker owns its axis, write its files and send it (idempotent: run again after a
    failure, it sends what was recorded)."""
    if not await _owned_here(services, command, position.partition):
        return
    async with outbox_wait.turn(services, position):  # never beside the outbox's retries; ended by a stop
        emission = await services.pipeline().brief(command, position)
        # Files that cannot be written stop this axis only: the emission waits in the outbox, the command is
        # acknowledged, and the worker goes on (streams.outbox).
        if emission is None or not await services.outbox.write(emission):
            return
        services.outbox.settle(emission.axis)
        # Its files are written: what only they need (its Markdown, packed) is not kept while its JSON is sent.
        emission = replace(emission, recorded_markdown=None)
        if not emission.delivered:
            what = f"the {command.trigger} of {command.axis} ending {command.end.isoformat()}"
            await must_finish(
                partial(deliver, services, outputs, emission),
                f"sending {what} to the briefings topic",
                stop=services.halt,
            )


async def _owned_here(services: Services, command: ControlCommand, partition: int) -> bool:
    """Whether this worker answers the command (after waiting for its partition's catch-up); logged if not."""
    ownership = services.ownership
    refusal = ownership.refusal(command.axis, partition)
    if refusal is None and not await ownership.wait_ready(partition):
        refusal = "not_owned"  # the partition moved while its state was catching up
    if refusal is None:
        return True
    log.warning(
        "%s command for %s on control partition %d not answered here: %s (axis partition %d)",
        command.trigger,
        command.axis,
        partition,
        refusal,
        ownership.partition_of(command.axis),
        extra={"axis": command.axis},
    )
    services.metrics.commands_ignored.labels(reason=refusal).inc()
    return False


async def deliver(services: Services, outputs: Outputs, emission: Emission) -> None:
    """Send a recorded briefing to the briefings topic, then record that it was acknowledged."""
    # In a thread: its first read unpacks the recorded JSON (~75 MB at 100k sources) for its size and checksum;
    # those blocks leave as freed, as a briefing's do (streams.heap).
    with briefing_heap():
        messages = await asyncio.to_thread(services.pipeline().messages, emission)
        await outputs.briefing(emission.axis, messages)
        del messages
    services.pipeline().delivered(emission)
