"""`predigest backfill`: publish a large archive to `predigest.raw` fast, skipping what the ledger acknowledged."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import BatchBuilder

from processors.raw_record import raw_record, raw_record_of
from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger
from streams import kafka_io, root_files
from streams.backfill_todo import Todo
from streams.root_files import Entry
from streams.settings import Settings

log = logging.getLogger(__name__)

Compression = Literal["gzip", "lz4", "zstd", "snappy", "none"]
# Uncompressed: aiokafka's zstd (level 3, 5:1) cost the backfill ~90 µs a note, and the broker (which
# decompresses a batch to check it) and the worker's consumer paid again, against 5x the raw topic's bytes
# (docs/performance.md). gzip and lz4 run at level 9 (25-35 MB/s) in aiokafka.
DEFAULT_COMPRESSION: Compression = "none"
# One batch per partition is in flight at a time (aiokafka's sender), so a batch must hold many notes.
DEFAULT_BATCH_BYTES = 4 * 1024 * 1024
DEFAULT_LINGER_MS = 50
CHUNK = 512  # files read and hashed together while the previous chunk is being sent
LEDGER_FLUSH = 2000  # acknowledged files written to the ledger in one statement
# After a signal, the wait for the batches already handed to the producer: within the command's hard exit (10 s),
# so that the ledger is written before it.
DELIVERY_WAIT_SECONDS = 5.0


@dataclass(frozen=True)
class Prepared:
    """A file read and hashed, with its record encoded, or the reason it is not sent."""

    rel: str
    size: int
    mtime: float
    sha256: str
    value: bytes | None  # None: unchanged bytes, or vanished / changed while read
    refused: str = ""  # why value is a refusal (a symlink, a FIFO …): sent so that the briefing lists it


@dataclass
class BackfillReport:
    """What a backfill did."""

    files: int = 0  # files under the watched folders
    skipped: int = 0  # unchanged since the ledger's acknowledgement
    published: int = 0
    unchanged_bytes: int = 0  # stat changed, content did not: ledger updated, nothing sent
    refused: int = (
        0  # refused (symlink, not a regular file …; sent as refusals) or vanished/changed while read
    )
    bytes: int = 0  # file bytes of the published ones
    seconds: float = 0.0
    step: str = "starting"  # what it is doing (a signal's line says it): starting, sending, finishing


Progress = Callable[[int, int], None]  # (files done, file bytes done), called as acknowledgements arrive


def codec(compression: Compression) -> str | None:
    """aiokafka's `compression_type` for a compression name (it takes None, not "none")."""
    return None if compression == "none" else compression


def make_bulk_producer(
    settings: Settings,
    compression: Compression = DEFAULT_COMPRESSION,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    linger_ms: int = DEFAULT_LINGER_MS,
) -> AIOKafkaProducer:
    """Idempotent, acks=all, like the watcher's, but with batches that hold hundreds of notes."""
    return AIOKafkaProducer(
        **kafka_io.client_kwargs(settings),
        acks="all",
        enable_idempotence=True,
        compression_type=codec(compression),
        partitioner=kafka_io.key_partitioner,
        max_request_size=kafka_io.MAX_MESSAGE_BYTES,
        max_batch_size=batch_bytes,
        linger_ms=linger_ms,
        request_timeout_ms=60000,
    )


def _prepare(c: Entry, read: root_files.FileOutcome, known_digest: str | None) -> Prepared:
    """Hash and encode one file read (in a worker thread: file reads, sha256 and the record release the GIL)."""
    if isinstance(read, root_files.Refused):
        return _refusal(c, read, known_digest)
    if not isinstance(read, root_files.Regular):
        return Prepared(c.rel, c.size, c.mtime, "", None)
    # An oversized file travels without its bytes so that the parser records the rejection.
    data = read.data or b""
    digest = hashlib.sha256(data).hexdigest() if data else f"size-{read.size}"
    if digest == known_digest:
        return Prepared(c.rel, read.size, read.mtime, digest, None)
    value = raw_record_of(c.rel, data, read.size, read.mtime, digest)
    return Prepared(c.rel, read.size, read.mtime, digest, value)


def _refusal(c: Entry, refused: root_files.Refused, known_digest: str | None) -> Prepared:
    """The refusal record the watcher would send (same digest, so neither sends it twice)."""
    size = c.size if refused.size is None else refused.size
    mtime = c.mtime if refused.mtime is None else refused.mtime
    digest = f"refused-{refused.reason}"
    if digest == known_digest:
        return Prepared(c.rel, size, mtime, digest, None)
    raw = root_files.refusal_record(c.rel, size, mtime, refused)
    return Prepared(c.rel, size, mtime, digest, raw_record(raw), refused=refused.detail)


def _prepare_many(
    root: Path, chunk: list[Entry], max_bytes: int, known: dict[str, tuple[int, float, str]]
) -> list[Prepared]:
    # Closed on any exit: a failure's traceback would otherwise keep the generator, and its folder open.
    with contextlib.closing(root_files.read_many(root, [c.rel for c in chunk], max_bytes)) as reads:
        return [
            _prepare(c, read, (known.get(c.rel) or (0, 0.0, None))[2])
            for c, read in zip(chunk, reads, strict=True)
        ]


class _Acks:
    """Acknowledged files, written to the ledger in large statements: one per file would cap the rate."""

    def __init__(self, ledger: Ledger, report: BackfillReport, progress: Progress | None) -> None:
        self._ledger = ledger
        self._report = report
        self._progress = progress
        self._rows: list[tuple[str, int, float, str]] = []
        self.refused = False  # the ledger refused a write: the backfill ends, its close tries no more

    def add(self, p: Prepared, *, sent: bool) -> None:
        self._rows.append((p.rel, p.size, p.mtime, p.sha256))
        if sent:
            self._report.published += 1
            self._report.bytes += p.size
        if len(self._rows) >= LEDGER_FLUSH:
            self.flush()
        if self._progress is not None:
            self._progress(1, p.size)

    def flush(self) -> None:
        """The rows to the ledger, which keeps them when DuckDB refuses (for its close's line, which counts them)."""
        rows, self._rows = self._rows, []
        if rows:
            try:
                self._ledger.acknowledge_many(rows)
            except LedgerWriteError:
                self.refused = True
                raise


async def backfill(
    settings: Settings,
    *,
    compression: Compression = DEFAULT_COMPRESSION,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    linger_ms: int = DEFAULT_LINGER_MS,
    threads: int = 4,
    on_total: Callable[[int, int], None] | None = None,
    progress: Progress | None = None,
    report: BackfillReport | None = None,
) -> BackfillReport:
    """Publish every file under the root that the ledger has not acknowledged in its current form.

    Sent in the order of their paths, from the first chunk walked on: `on_total` (the files and bytes to send)
    comes once the walk, which runs ahead, is over; on a large root after the first `progress`. `report`, when
    given, is the one filled in as it goes (what a signal's line says)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    root = settings.root.resolve()
    report = BackfillReport() if report is None else report
    ledger = Ledger(settings.ledger_file)
    prod = make_bulk_producer(settings, compression, batch_bytes, linger_ms)

    def walked(todo: Todo) -> None:
        report.files, report.skipped = todo.files, todo.skipped
        if on_total is not None:
            on_total(todo.count, todo.size)
        log.info("backfill of %s: %d file(s), %d already acknowledged", root, todo.files, todo.skipped)

    acks = _Acks(ledger, report, progress)
    try:
        known = ledger.entries()
        todo = Todo(root, known, CHUNK, walked)
        # A thread more for the walk, which runs ahead of the reads.
        pool = ThreadPoolExecutor(max_workers=threads + 1, thread_name_prefix="backfill-read")
        with pool, todo.walking(pool):

            async def prepared() -> list[Prepared]:
                """The next chunk walked, read and encoded, one slice per thread; [] once all were."""
                chunk = await todo.next()
                step = max(1, -(-len(chunk) // threads))  # a task per slice: a future per file costs more
                slices = (chunk[i : i + step] for i in range(0, len(chunk), step))
                max_bytes = settings.max_bytes
                parts = [loop.run_in_executor(pool, _prepare_many, root, s, max_bytes, known) for s in slices]
                return [p for part in await asyncio.gather(*parts) for p in part]

            # The first chunk is walked and read while the topics are checked and the producer starts.
            first = asyncio.ensure_future(prepared())
            try:
                await kafka_io.ensure_topics(settings)
                await prod.start()
            except BaseException:
                first.cancel()
                raise
            todo.start_telling()
            report.step = "sending"
            await _send_all(prod, settings.kafka.topic("raw"), first, prepared, acks, report)
        acks.flush()
    finally:
        try:
            await _stop(prod)
        finally:  # a signal during the stop raises its CancelledError there: the ledger is closed all the same
            # A refused write is not tried again: the close says it once, with what follows (a re-run sends them).
            ledger.close(write=not acks.refused)
    report.seconds = loop.time() - started
    return report


async def _stop(prod: AIOKafkaProducer) -> None:
    """The producer's stop (a no-op if it never started), run to its end even when a signal comes meanwhile: cut
    short, it leaves its sender's tasks pending, which asyncio reports at the exit."""
    stopping = asyncio.ensure_future(prod.stop())
    try:
        await asyncio.shield(stopping)
    except asyncio.CancelledError:
        await stopping
        raise


Sent = tuple[list[Prepared], asyncio.Future[object]]  # a batch's files, acknowledged together


class _Batches:
    """One open record batch per partition, filled here and handed to the producer once full.

    aiokafka's send() per record (its futures, the accumulator's bookkeeping) cost ~19 µs a note of the backfill's
    ~220 (docs/performance.md); a batch's records go where send() would put them, in the same order, acks=all.
    """

    def __init__(self, prod: AIOKafkaProducer, topic: str, partitions: list[int]) -> None:
        self._prod, self._topic, self._partitions = prod, topic, partitions
        self._open: dict[int, tuple[BatchBuilder, list[Prepared]]] = {}

    async def add(self, p: Prepared) -> Sent | None:
        """Append a file's record; the batch it filled, once handed to the producer, if it filled one."""
        key = p.rel.encode()
        partition = kafka_io.key_partitioner(key, self._partitions, self._partitions)
        batch, files = self._open.get(partition) or self._start(partition)
        if batch.append(timestamp=None, key=key, value=p.value) is not None:
            files.append(p)
            return None
        sent = await self._send(partition)
        batch, files = self._start(partition)
        batch.append(
            timestamp=None, key=key, value=p.value
        )  # a batch takes its first record whatever its size
        files.append(p)
        return sent

    async def send_rest(self, in_flight: list[Sent]) -> None:
        """Hand every batch still open to the producer, each added to `in_flight` as soon as it is handed."""
        for partition in list(self._open):
            in_flight.append(await self._send(partition))

    def _start(self, partition: int) -> tuple[BatchBuilder, list[Prepared]]:
        self._open[partition] = (self._prod.create_batch(), [])
        return self._open[partition]

    async def _send(self, partition: int) -> Sent:
        batch, files = self._open.pop(partition)
        batch.close()
        # Waits while this partition's previous batch is still queued: one in flight, one filling, per partition.
        return files, await self._prod.send_batch(batch, self._topic, partition=partition)


async def _send_all(
    prod: AIOKafkaProducer,
    topic: str,
    first: asyncio.Future[list[Prepared]],
    prepared: Callable[[], Awaitable[list[Prepared]]],
    acks: _Acks,
    report: BackfillReport,
) -> None:
    """Walk and read chunk k+1 while chunk k is handed to the producer; delivery futures are awaited as they land."""
    next_read = first
    in_flight: list[Sent] = []
    try:
        batches = _Batches(prod, topic, sorted(await prod.partitions_for(topic)))
        while chunk := await next_read:
            next_read = asyncio.ensure_future(prepared())
            for p in chunk:
                if p.value is None:
                    if p.sha256:
                        report.unchanged_bytes += 1
                        acks.add(p, sent=False)
                    else:
                        _tell_refused(p, report)
                    continue
                if p.refused:
                    _tell_refused(p, report)
                sent = await batches.add(p)
                if sent is not None:
                    in_flight.append(sent)
            await _settle(in_flight, acks, wait=False)
        report.step = "finishing"
        await batches.send_rest(in_flight)
        await _settle(in_flight, acks, wait=True)
    except asyncio.CancelledError:  # a signal (streams.backfill_cli)
        await _record_delivered(in_flight, acks)
        raise
    finally:
        next_read.cancel()  # nothing once it is done
        acks.flush()  # whatever Kafka acknowledged is remembered, even when a later send failed


def _tell_refused(p: Prepared, report: BackfillReport) -> None:
    # Said as the file's turn to be sent comes, not where it is read: the first chunk is read before Kafka answered.
    if p.refused:
        log.warning("refusing %s: it %s", p.rel, p.refused)
    else:
        log.warning("%s vanished or changed while it was read; a re-run or the watcher sends it", p.rel)
    report.refused += 1


async def _record_delivered(in_flight: list[Sent], acks: _Acks) -> None:
    """After a signal: wait for the batches handed to the producer (its stop would deliver them anyway) and record
    every one Kafka acknowledged, so that a re-run does not send them again; a failed one is sent again."""
    waiting = [fut for _, fut in in_flight]
    if waiting:  # asyncio.wait cancels none of them, even when a second cancellation comes
        await asyncio.wait(waiting, timeout=DELIVERY_WAIT_SECONDS)
    for files, fut in in_flight:
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            for p in files:
                acks.add(p, sent=not p.refused)


async def _settle(in_flight: list[Sent], acks: _Acks, *, wait: bool) -> None:
    """Record the acknowledged prefix in order, taking it off `in_flight` (what a signal finds there is not recorded
    yet); raise the first failure."""
    while in_flight:
        files, fut = in_flight[0]
        if not fut.done():
            if not wait:
                return
            # Not `await fut`: a signal's cancellation would cancel the delivery itself.
            await asyncio.wait([fut])
        fut.result()  # a failed delivery raises here, after the acknowledged ones before it are recorded
        del in_flight[0]
        for p in files:
            acks.add(p, sent=not p.refused)
