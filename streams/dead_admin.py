"""`predigest dead list | replay | resume`: look at the dead-letter topic, re-drive chosen records onto their source
topic after a fix, and clear a worker's dead-letter stop."""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from rich.console import Console
from rich.table import Table

from processors.dead_letters import DeadLetter, read_dead_letter, reason_text, replay_headers
from processors.raw_record import readable
from streams import kafka_io
from streams.dead_letters import read_stop_file
from streams.errors import StreamsError
from streams.settings import Settings

log = logging.getLogger("predigest")

PREVIEW_CHARS = 80
REPLAYABLE = ("raw", "documents", "control")  # the stages a dead letter can come from


@dataclass(frozen=True)
class Found:
    """A record of the dead-letter topic: where it sits there (its id is `partition:offset`) and what it holds."""

    partition: int
    offset: int
    letter: DeadLetter | None  # None: a record predigest did not write (no dead-letter headers)

    @property
    def id(self) -> str:
        return f"{self.partition}:{self.offset}"


def preview(value: bytes | None) -> str:
    """The start of a value as one line of text (a v2 raw record from its header on): control characters as `·`."""
    if value is None:
        return "(no value)"
    text = readable(value)[: PREVIEW_CHARS * 4].decode("utf-8", "replace")
    return "".join(ch if ch.isprintable() else "·" for ch in text)[:PREVIEW_CHARS]


async def read_dead(settings: Settings, keep: Callable[[Found], None]) -> int:
    """Hand every record of the dead-letter topic to `keep`, oldest first per partition; how many were read."""
    topic = settings.kafka.topic("dead")
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
    await kafka_io.start_client(settings, admin)
    try:
        parts = await kafka_io.topic_partitions(admin, [topic])
    finally:
        await admin.close()
    if not parts:
        raise StreamsError(
            f"{topic} does not exist yet: no worker of this deployment has run since it was added"
        )
    consumer = kafka_io.make_consumer(settings)
    await kafka_io.start_client(settings, consumer)
    try:
        return await _drain(consumer, parts, keep)
    finally:
        await consumer.stop()


async def _drain(
    consumer: AIOKafkaConsumer, parts: list[TopicPartition], keep: Callable[[Found], None]
) -> int:
    consumer.assign(parts)
    ends = await consumer.end_offsets(parts)
    await consumer.seek_to_beginning(*parts)
    count = 0
    while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
        batch = await consumer.getmany(timeout_ms=1000)
        for records in batch.values():
            for r in records:
                letter = read_dead_letter(r.key, r.value, list(r.headers or ()))
                keep(Found(r.partition, r.offset, letter))
                count += 1
    return count


def _row(found: Found, settings: Settings) -> dict[str, Any]:
    x = found.letter
    if x is None:
        return {"id": found.id, "error": "not a predigest dead letter (no predigest.dead.* headers)"}
    return {
        "id": found.id,
        "topic": x.topic,
        "partition": x.partition,
        "offset": x.offset,
        "stage": x.stage,
        "reason": x.reason,
        "reason_text": reason_text(x.reason, settings.lang),
        "error": x.error,
        "failed_at": x.failed_at.isoformat(),
        "key": x.key.decode("utf-8", "replace") if x.key is not None else None,
        "bytes": len(x.value) if x.value is not None else None,
        "replays": x.replays,
        "note": x.note,  # a v5 documents record's note that failed alone, else null
        "preview": preview(x.value),
    }


def _table(rows: list[dict[str, Any]], settings: Settings, total: int) -> None:
    table = Table("ID", "SOURCE", "OFFSET", "REASON", "FAILED AT", "ERROR", "PREVIEW", box=None)
    for r in rows:
        if "topic" not in r:
            table.add_row(r["id"], "?", "", "", "", r["error"], "")
            continue
        when = r["failed_at"][:19].replace("T", " ")
        error = r["error"].strip().splitlines()[-1][:60] if r["error"].strip() else ""
        source = f"{r['topic']}[{r['partition']}]"
        table.add_row(r["id"], source, str(r["offset"]), r["reason"], when, error, r["preview"][:40])
    console = Console(file=sys.stdout, width=200, highlight=False, soft_wrap=True)
    console.print(table)
    topic = settings.kafka.topic("dead")
    console.print(
        f"{len(rows)} of {total} dead letter(s) on {topic} (times in UTC); replay: predigest dead replay --ids ID …"
    )


def list_dead(settings: Settings, limit: int, as_json: bool) -> int:
    """`dead list`: the newest `limit` dead letters, oldest first, without keeping every value in memory."""
    newest: list[tuple[datetime, int, int, Found]] = []  # a min-heap of at most `limit`

    def keep(found: Found) -> None:
        x = found.letter
        if x is not None and x.value is not None and len(x.value) > PREVIEW_CHARS * 4:
            # Only what the listing shows is kept of each value.
            found = Found(found.partition, found.offset, replace(x, value=x.value[: PREVIEW_CHARS * 4]))
        when = x.failed_at if x is not None else datetime.min.replace(tzinfo=UTC)
        item = (when, found.partition, found.offset, found)
        if len(newest) < limit:
            heapq.heappush(newest, item)
        elif limit > 0 and item[:3] > newest[0][:3]:
            heapq.heapreplace(newest, item)

    total = asyncio.run(read_dead(settings, keep))
    rows = [_row(item[3], settings) for item in sorted(newest, key=lambda item: item[:3])]
    if as_json:
        sys.stdout.write(
            json.dumps({"total": total, "dead_letters": rows}, indent=2, ensure_ascii=False) + "\n"
        )
    else:
        _table(rows, settings, total)
    return 0


def _wanted_ids(ids: Iterable[str]) -> set[tuple[int, int]]:
    """`0:12` (partition:offset on the dead-letter topic), or `12` for partition 0."""
    wanted = set()
    for text in ids:
        part, _, offset = text.rpartition(":")
        try:
            wanted.add((int(part) if part else 0, int(offset)))
        except ValueError:
            raise StreamsError(
                f"--ids {text!r} is not PARTITION:OFFSET (e.g. 0:12) as `dead list` shows"
            ) from None
    return wanted


def _asked(ids: list[str] | None, from_offset: int | None) -> set[tuple[int, int]]:
    """The ids a replay names; StreamsError when one is malformed or none is chosen (checked before any broker)."""
    if not ids and from_offset is None:
        raise StreamsError(
            "say which dead letters to replay: --ids ID … or --from-offset N (see `predigest dead list`)"
        )
    return _wanted_ids(ids or [])


def select(settings: Settings, ids: list[str] | None, from_offset: int | None) -> list[Found]:
    """The dead letters to re-drive, each origin once; StreamsError when an id is not there or none is chosen."""
    wanted = _asked(ids, from_offset)
    chosen: dict[tuple[str, int, int, int | None], Found] = {}
    seen: set[tuple[int, int]] = set()
    foreign: list[str] = []
    stage_topics = {settings.kafka.topic(stage) for stage in REPLAYABLE}

    def keep(found: Found) -> None:
        at = (found.partition, found.offset)
        if at in wanted:
            seen.add(at)
        elif from_offset is None or found.offset < from_offset:
            return
        x = found.letter
        if x is None or x.topic not in stage_topics:
            foreign.append(found.id)
            return
        # A letter sent twice is re-driven once; the notes of one v5 record that failed are letters of their own.
        chosen.setdefault((x.topic, x.partition, x.offset, x.note), found)

    asyncio.run(read_dead(settings, keep))
    missing = sorted(wanted - seen)
    if missing:
        listed = ", ".join(f"{p}:{o}" for p, o in missing)
        raise StreamsError(
            f"no dead letter at {listed} on {settings.kafka.topic('dead')}; `predigest dead list` shows the ids"
        )
    for text in foreign:
        log.warning("%s is not a dead letter of this deployment's topics; not replayed", text)
    return sorted(chosen.values(), key=lambda f: (f.partition, f.offset))


async def _redrive(settings: Settings, found: list[Found]) -> None:
    producer = kafka_io.make_producer(settings)
    await kafka_io.start_client(settings, producer)
    try:
        for f in found:
            x = f.letter
            assert x is not None, "select keeps dead letters only"
            partitions = producer.client.cluster.partitions_for_topic(x.topic) or set()
            if not partitions:
                await producer.client.force_metadata_update()
                partitions = producer.client.cluster.partitions_for_topic(x.topic) or set()
            # Its own partition: an axis's records must reach the worker that owns the axis.
            partition = x.partition if x.partition in partitions else None
            sent = await (
                await producer.send(
                    x.topic, x.value, key=x.key, partition=partition, headers=replay_headers(x)
                )
            )
            log.info(
                "replayed %s onto %s[%d] at offset %d (was offset %d, %s)",
                f.id,
                x.topic,
                sent.partition,
                sent.offset,
                x.offset,
                x.reason,
            )
    finally:
        await producer.stop()


def replay_dead(settings: Settings, ids: list[str] | None, from_offset: int | None, dry_run: bool) -> int:
    """`dead replay`: put the chosen dead letters back onto their source topics, byte for byte."""
    found = select(settings, ids, from_offset)
    if not found:
        log.info("nothing to replay")
        return 0
    if dry_run:
        for f in found:
            x = f.letter
            assert x is not None
            log.info(
                "would replay %s onto %s[%d] (was offset %d, %s)",
                f.id,
                x.topic,
                x.partition,
                x.offset,
                x.reason,
            )
        return 0
    asyncio.run(_redrive(settings, found))
    log.info("replayed %d record(s); each is processed again by the worker as a new record", len(found))
    return 0


def resume(settings: Settings) -> int:
    """`dead resume`: clear the worker's dead-letter stop, so that it dead-letters the failing records again."""
    stopped = read_stop_file(settings)
    if not stopped:
        log.info("no stage is stopped on its dead-letter limit (%s absent)", settings.dead_letter_stop_file)
        return 0
    settings.dead_letter_stop_file.unlink(missing_ok=True)
    for stage, why in stopped.items():
        log.info(
            "stage %s resumes: it stopped at %s[%s] offset %s (%s) at %s",
            stage,
            why.get("topic"),
            why.get("partition"),
            why.get("offset"),
            why.get("reason"),
            why.get("at"),
        )
    log.info("start the worker again: it dead-letters up to dead_letters.max_consecutive failures in a row")
    return 0


def run(args: argparse.Namespace, settings: Settings, resolve: Callable[[Settings], Settings]) -> int:
    """Dispatch `dead <action>`; `resolve` finds the broker (not needed to resume)."""
    if args.dead_action == "resume":
        return resume(settings)
    if args.dead_action == "replay":  # its arguments refused before a local broker is started for nothing
        _asked(args.ids, args.from_offset)
    settings = resolve(settings)
    if args.dead_action == "list":
        return list_dead(settings, args.limit, args.json)
    return replay_dead(settings, args.ids, args.from_offset, args.dry_run)
