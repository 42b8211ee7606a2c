"""Talk to the workers through Kafka: send close/flush commands, wait for the briefing they emit."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from uuid import uuid4

from pydantic import ValidationError

from processors.briefing_parts import Joiner, PartError
from processors.commands import check_command
from processors.models import Briefing, ControlCommand, Trigger
from sinks.clock import SYSTEM_CLOCK, Clock
from streams import kafka_io
from streams.errors import CommandRefusedError, StreamsError
from streams.settings import Settings

log = logging.getLogger(__name__)


def new_command(axis: str, trigger: Trigger, end: datetime, now: datetime) -> ControlCommand:
    return ControlCommand(axis=axis, trigger=trigger, end=end, requested_at=now, request_id=uuid4().hex)


def checked_command(
    settings: Settings, axis: str, trigger: Trigger, end: datetime, now: datetime
) -> ControlCommand:
    """A new command, or CommandRefusedError with the reason a worker would refuse it (the CLI's and web's door)."""
    command = new_command(axis, trigger, end, now)
    refused = check_command(command, settings.command_limits, now)
    if refused is not None:
        raise CommandRefusedError(refused.reason, f"{trigger} refused ({refused.reason}): {refused.detail}")
    return command


async def send(settings: Settings, command: ControlCommand) -> ControlCommand:
    """Put one command on `predigest.control` (key: axis) and wait for Kafka's acknowledgement."""
    producer = kafka_io.make_producer(settings)
    await kafka_io.start_client(settings, producer)
    try:
        await (
            await producer.send(
                settings.kafka.topic("control"),
                key=command.axis.encode(),
                value=command.model_dump_json().encode(),
            )
        )
    finally:
        await producer.stop()
    log.info("sent %s for %s window ending %s", command.trigger, command.axis, command.end.isoformat())
    return command


async def send_command(
    settings: Settings, axis: str, trigger: Trigger, end: datetime, clock: Clock = SYSTEM_CLOCK
) -> ControlCommand:
    """Check a command as a worker would, then send it; CommandRefusedError for one a worker would refuse."""
    return await send(settings, checked_command(settings, axis, trigger, end, clock.now()))


async def await_briefing(
    settings: Settings, axis: str, end: datetime, trigger: Trigger, timeout: float
) -> Briefing:
    """The first briefing on `predigest.briefings` for (axis, end, trigger), reading from the start."""
    consumer = kafka_io.make_consumer(settings, settings.kafka.topic("briefings"))
    await kafka_io.start_client(settings, consumer)
    try:
        async with asyncio.timeout(timeout):
            joiners: dict[int, Joiner] = {}  # per partition: a briefing over the message limit comes in parts
            async for msg in consumer:
                try:
                    joined = joiners.setdefault(msg.partition, Joiner()).feed(
                        msg.offset, msg.value or b"", list(msg.headers)
                    )
                    b = None if joined is None else Briefing.model_validate_json(joined.value)
                except (PartError, ValidationError) as exc:
                    # Not the one awaited (a series cut by retention, a stray message): the next may be.
                    log.warning(
                        "briefings[%d]@%d is not a briefing, skipped: %s", msg.partition, msg.offset, exc
                    )
                    continue
                if b is not None and b.axis == axis and b.window.end == end and b.trigger == trigger:
                    return b
    except TimeoutError:
        pass
    finally:
        await consumer.stop()
    raise StreamsError(
        f"no briefing for {axis} ending {end.isoformat()} ({trigger}) arrived within {timeout:.0f}s; "
        "is a worker running? its log is next to its state file"
    )
