"""The watcher: publishes every new, changed or deleted file under the root to `predigest.raw`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import watchfiles
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError

from processors.labels import writer_label
from processors.models import RawFile
from processors.root_paths import WATCHED, FileRefusal, top_folder, watched
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import kafka_io, root_files, watcher_web
from streams.errors import BrokerUnavailableError
from streams.logs import doc_context
from streams.renames import RenameWatch
from streams.settings import Settings

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 10.0
RENEW_INTERVAL_SECONDS = 1.0
SETTLE_TICK_SECONDS = 0.1  # how often quiet periods are checked; a file renamed into place wakes it at once


@dataclass
class _Pending:
    """A path that changed: its last observed (size, mtime), since when, and whether it was ever a file."""

    size: int  # -1: not there
    mtime: float
    since: float
    was_file: bool
    complete: bool = False  # renamed into place (IN_MOVED_TO) and unchanged since: no quiet period needed


class Watcher:
    """Reads a file only once it has been quiet for `quiet_seconds`; the ledger moves only after an ack."""

    def __init__(
        self,
        settings: Settings,
        producer: AIOKafkaProducer,
        ledger: Ledger,
        metrics: WatcherMetrics,
        clock: Callable[[], float] = time.time,
        renew: Callable[[], Awaitable[AIOKafkaProducer]] | None = None,
    ) -> None:
        self._s = settings
        self._root = settings.root.resolve()
        self.producer = producer
        self._renew = renew
        self._stale = False  # the last send failed: the producer's idempotence sequence is suspect
        self._last_renew = 0.0
        self._ledger = ledger
        self._metrics = metrics
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._topic = settings.kafka.topic("raw")
        self.kafka_failed = False  # the last settle stopped on a Kafka error
        self.kafka_ok = True  # the last send or probe reached Kafka (started_producer reached it first)
        self.scanned = False  # the start-up scan is done: everything already in the root was published
        self._wake = asyncio.Event()  # a file is ready now: settle without waiting for the tick
        self._beat_at = clock()
        self._beat()

    def _beat(self) -> None:
        """The loop made progress: what /healthz and predigest_watcher_loop_heartbeat_timestamp_seconds show."""
        self._beat_at = self._clock()
        self._metrics.watcher_heartbeat.set(self._beat_at)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Healthy while the loop made progress within `watcher_stall_seconds` (read from the HTTP thread)."""
        age = max(0.0, self._clock() - self._beat_at)
        ok = age <= self._s.watcher_stall_seconds
        return ok, {"status": "ok" if ok else "stalled", "heartbeat_age_seconds": round(age, 3)}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready when the loop is alive, Kafka answered last time and the start-up scan is done (`/readyz`)."""
        alive, health = self.health()
        checks = {
            "loop": {"ok": alive, "heartbeat_age_seconds": health["heartbeat_age_seconds"]},
            "kafka": {"ok": self.kafka_ok},
            "startup_scan": {"ok": self.scanned},
        }
        not_ready = [name for name, check in checks.items() if not check["ok"]]
        self._metrics.ready.set(0 if not_ready else 1)
        return not not_ready, {
            "status": "not_ready" if not_ready else "ready",
            "not_ready": not_ready,
            "checks": checks,
        }

    def _rel(self, path: Path) -> str | None:
        try:
            rel = path.relative_to(self._root).as_posix()
        except ValueError:
            return None
        return rel if watched(rel) else None

    def _walk(self, rel: str) -> Iterator[str]:
        # A symlinked folder is listed (and refused), never followed; what vanishes mid-walk is skipped.
        return (e.rel for e in root_files.walk(self._root, rel) if watched(e.rel))

    def files(self) -> list[str]:
        return [rel for top in WATCHED for rel in self._walk(top)]

    def _stat(self, rel: str) -> tuple[int, float] | None:
        return root_files.lstat(self._root, rel)

    def mark(self, rel: str, *, since: float | None = None, complete: bool = False) -> None:
        """Note that a path changed; it is read once it stops changing, or at once if `complete`."""
        now = self._clock()
        seen = self._stat(rel)
        before = self._pending.get(rel)
        was_file = seen is not None or (before is not None and before.was_file)
        size, mtime = seen if seen is not None else (-1, 0.0)
        if before is not None and before.complete and (before.size, before.mtime) == (size, mtime):
            return  # watchfiles' own event for the rename: the file is still the complete one
        self._pending[rel] = _Pending(
            size, mtime, now if since is None else min(since, now), was_file, complete and seen is not None
        )

    def moved(self, path: Path) -> None:
        """A file was renamed into place: a writer finished it, so it is published without a quiet period."""
        rel = self._rel(path)
        if rel is not None:
            self.mark(rel, complete=True)
            self._wake.set()

    def mark_tree(self, rel: str) -> None:
        """A folder appeared, vanished or was renamed: every file under it, and every one known there before."""
        prefix = f"{rel}/"
        known = {p for p in (*self._ledger.paths(), *self._pending) if p.startswith(prefix)}
        for path in sorted(known | set(self._walk(rel))):
            self.mark(path)

    async def settle(self, *, force: bool = False) -> int:
        """Publish every pending path that has been quiet long enough; returns how many were published."""
        published = 0
        now = self._clock()
        self.kafka_failed = False
        for rel, p in list(self._pending.items()):
            self._beat()
            current = self._stat(rel) or (-1, 0.0)
            if current != (p.size, p.mtime):
                self._pending[rel] = _Pending(*current, now, p.was_file or current[0] >= 0)
                continue
            if not force and not p.complete and now - p.since < self._s.quiet_seconds:
                continue
            del self._pending[rel]
            try:
                published += await self._publish(rel, p.was_file)
            except KafkaError as exc:
                # The ledger has not moved: keep the path pending and retry once the broker answers again.
                self._pending[rel] = p
                self.kafka_failed = True
                log.warning("Kafka unreachable, %s stays pending: %s", rel, exc, extra=doc_context(rel))
                break
        return published

    async def scan(self) -> int:
        """Compare the tree with the ledger and mark what changed or vanished; publish what is quiet."""
        seen = set(self.files())
        self._beat()
        for rel in sorted(seen):
            st = self._stat(rel)
            entry = self._ledger.get(rel)
            if st is None or entry is None or (entry[0], entry[1]) != st:
                # A file untouched since its mtime has been quiet that long already; a growing one has not.
                self.mark(rel, since=st[1] if st is not None else None)
        for rel in sorted(self._ledger.paths() - seen):
            self.mark(rel)
        return await self.settle()

    async def drain(self) -> int:
        """Publish everything pending, waiting for each file to be quiet (the one-shot scan)."""
        published = 0
        while self._pending:
            published += await self.settle()
            if self.kafka_failed:
                raise BrokerUnavailableError(
                    f"Kafka at {self._s.kafka.bootstrap} did not acknowledge the files"
                )
            if self._pending:
                await asyncio.sleep(min(0.1, self._s.quiet_seconds))
        return published

    async def _publish(self, rel: str, was_file: bool) -> int:
        # Opened without following links and read from the descriptor (streams/root_files.py): a symlink or a
        # FIFO swapped in after a check can neither leak an outside file nor block the watcher.
        read = root_files.read_file(self._root, rel, self._s.max_bytes)
        if isinstance(read, root_files.Missing):
            return await self._gone(rel, was_file)
        if isinstance(read, root_files.Folder):
            self.mark_tree(rel)  # a folder where a file was: what is under it is looked at one by one
            return 0
        if isinstance(read, root_files.Changed):
            self.mark(rel)  # it changed while being read: read it again once it is quiet
            return 0
        if isinstance(read, root_files.Refused):
            return await self._refuse(rel, read)
        kind, writer = top_folder(rel), writer_label(rel)
        self._metrics.documents_seen.labels(kind=kind, writer=writer).inc()
        data = read.data or b""  # an oversized file travels without its bytes; the parser rejects it
        if read.data is not None and self._stat(rel) != (read.size, read.mtime):
            self.mark(rel)  # replaced since it was opened: read what is there now once it is quiet
            return 0
        digest = hashlib.sha256(data).hexdigest() if data else f"size-{read.size}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest:
            self._ledger.acknowledge(rel, read.size, read.mtime, digest)
            return 0
        await self._send(RawFile(path=rel, content=data, size=read.size, mtime=read.mtime, sha256=digest))
        self._ledger.acknowledge(rel, read.size, read.mtime, digest)
        self._metrics.documents_published.labels(kind=kind, writer=writer).inc()
        self._metrics.watcher_lag.observe(max(0.0, self._clock() - read.mtime))
        log.info("published %s (%d bytes)", rel, read.size, extra=doc_context(rel))
        return 1

    async def _gone(self, rel: str, was_file: bool) -> int:
        if self._ledger.get(rel) is not None:
            raw = RawFile(path=rel, content=b"", size=0, mtime=self._clock(), sha256="", deleted=True)
            await self._send(raw)
            self._ledger.forget(rel)
            log.info("published deletion of %s", rel, extra=doc_context(rel))
            return 1
        if was_file:
            # Never read, never published: nothing of it can reach a briefing, so nothing is lost either.
            log.info("%s vanished before it could be read; nothing published", rel, extra=doc_context(rel))
            self._metrics.documents_rejected.labels(reason="vanished").inc()
        return 0

    async def _refuse(self, rel: str, refused: root_files.Refused) -> int:
        """Publish a refusal (no bytes) so that the worker lists the file as rejected; once per version."""
        label: FileRefusal = refused.reason
        # The path's own stat, as the rescans compare it with the ledger (no content is read for it).
        seen = self._stat(rel)
        if refused.size is not None and refused.mtime is not None:
            size, mtime = refused.size, refused.mtime
        else:
            size, mtime = seen if seen is not None else (0, self._clock())
        digest = f"refused-{label}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest and (entry[0], entry[1]) == (size, mtime):
            return 0
        if label == "symlink":
            with contextlib.suppress(OSError):
                log.warning(
                    "%s is a symlink to %s", rel, os.readlink(self._root / rel), extra=doc_context(rel)
                )
        log.warning("refused %s: it %s", rel, refused.detail, extra=doc_context(rel))
        self._metrics.documents_rejected.labels(reason=label).inc()
        await self._send(
            RawFile(
                path=rel,
                content=b"",
                size=size,
                mtime=mtime,
                sha256=digest,
                refused=f"it {refused.detail}",
                refused_code=label,
            )
        )
        self._ledger.acknowledge(rel, size, mtime, digest)
        return 1

    async def _send(self, raw: RawFile) -> None:
        try:
            if self._stale:
                await self._renew_producer()
            fut = await self.producer.send(
                self._topic, key=raw.path.encode(), value=raw.model_dump_json().encode()
            )
            await fut
        except KafkaError:
            self._kafka(False)
            self._stale = self._renew is not None
            raise
        self._kafka(True)

    def _kafka(self, up: bool) -> None:
        self.kafka_ok = up
        self._metrics.kafka_up.set(1 if up else 0)

    async def _renew_producer(self) -> None:
        """A fresh producer id after a failed send: aiokafka keeps counting sequence numbers past a batch that
        expired, and the broker then refuses every later one (OutOfOrderSequenceNumber) until a restart."""
        assert self._renew is not None
        if self._clock() - self._last_renew < RENEW_INTERVAL_SECONDS:
            raise KafkaConnectionError("waiting before the next attempt to reconnect")
        self._last_renew = self._clock()
        fresh = await self._renew()  # raises while the broker is still away; the old one stays for the probe
        old, self.producer = self.producer, fresh
        self._stale = False
        log.info("a new Kafka producer replaces the one whose send failed")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(old.stop(), PROBE_TIMEOUT_SECONDS)

    async def probe(self) -> bool:
        """A metadata round trip, so that `predigest_kafka_up` stays true to life while nothing is sent."""
        try:
            await asyncio.wait_for(self.producer.client.fetch_all_metadata(), PROBE_TIMEOUT_SECONDS)
        except (KafkaError, TimeoutError, OSError) as exc:
            log.warning("Kafka unreachable: %s", exc)
            self._kafka(False)
            return False
        self._kafka(True)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Startup scan, then events, with a periodic rescan because watchfiles can drop events."""
        count = await self.scan()
        self.scanned = True
        log.info(
            "startup scan published %d file(s) from %s; %d waiting to be quiet",
            count,
            self._root,
            len(self._pending),
        )
        watch_task = asyncio.create_task(self._watch(stop))
        # Its own task: a send blocked on a dead broker must not keep the gauge at 1.
        probe_task = asyncio.create_task(self._probe_every(stop))
        renames = RenameWatch(self._root, WATCHED, self.moved)
        renames.start()
        last_rescan = self._clock()
        try:
            while not stop.is_set():
                self._beat()
                self._wake.clear()
                await self.settle()
                if self._clock() - last_rescan >= self._s.rescan_seconds:
                    await self.scan()
                    last_rescan = self._clock()
                await self._pause(stop)
        finally:
            renames.close()
            watch_task.cancel()
            probe_task.cancel()

    async def _pause(self, stop: asyncio.Event) -> None:
        """Until the next tick, a file renamed into place, or the stop."""
        waits = [asyncio.create_task(stop.wait()), asyncio.create_task(self._wake.wait())]
        try:
            await asyncio.wait(waits, timeout=SETTLE_TICK_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _probe_every(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self._s.metrics_interval_seconds)
            if not stop.is_set():
                await self.probe()

    async def _watch(self, stop: asyncio.Event) -> None:
        # The root itself is watched, so folders created later (or renamed) are seen without a restart.
        async for changes in watchfiles.awatch(self._root, stop_event=stop, debounce=200, step=50):
            for _change, name in changes:
                path = Path(name)
                rel = self._rel(path)
                if rel is None:
                    continue
                if path.is_dir() and not path.is_symlink():
                    self.mark_tree(rel)  # inotify names a renamed folder, not the files in it
                elif not os.path.lexists(path) and self._knows_folder(rel):
                    self.mark_tree(rel)
                else:
                    self.mark(rel)

    def _knows_folder(self, rel: str) -> bool:
        prefix = f"{rel}/"
        return any(p.startswith(prefix) for p in (*self._pending, *self._ledger.paths()))


async def started_producer(settings: Settings) -> AIOKafkaProducer:
    """An idempotent producer, started (start() fetches the cluster's metadata, so it fails while Kafka is away)."""
    producer = kafka_io.make_producer(settings)
    try:
        await producer.start()
    except BaseException:
        await producer.stop()
        raise
    return producer


async def publish_root(settings: Settings, *, follow: bool, stop: asyncio.Event) -> int:
    """Scan the root into `predigest.raw`; with follow, keep watching until stop is set."""
    metrics = WatcherMetrics()
    producer = await started_producer(settings)
    metrics.kafka_up.set(1)
    ledger = Ledger(settings.ledger_file)
    watcher = Watcher(settings, producer, ledger, metrics, renew=lambda: started_producer(settings))
    try:
        if not follow:
            return await watcher.scan() + await watcher.drain()
        checks = {"/healthz": watcher.health, "/readyz": watcher.readiness}
        server = watcher_web.serve(settings.web_host, settings.watcher_metrics_port, metrics, checks)
        try:
            await watcher.run(stop)
        finally:
            if server is not None:
                server.shutdown()
        return 0
    finally:
        ledger.close()
        await watcher.producer.stop()
