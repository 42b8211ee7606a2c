"""The watcher: publishes every new, changed or deleted file under the root to `predigest.raw`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
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
from processors.reasons import RejectionCode
from sinks.ledger import Ledger
from sinks.metrics import Metrics
from streams import kafka_io
from streams.errors import BrokerUnavailableError
from streams.logs import doc_context
from streams.renames import RenameWatch
from streams.settings import Settings

log = logging.getLogger(__name__)

WATCHED = ("inbox", "paper_cards", "work-queue", "living")
PROBE_TIMEOUT_SECONDS = 10.0
RENEW_INTERVAL_SECONDS = 1.0
SETTLE_TICK_SECONDS = 0.1  # how often quiet periods are checked; a file renamed into place wakes it at once


def _ignored(name: str) -> bool:
    # Editors and writers park half-written files under such names before renaming them into place.
    return name.startswith(".") or name.endswith(("~", ".tmp", ".swp", ".part"))


def _kind(rel: str) -> str:
    return rel.split("/", 1)[0]


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
        metrics: Metrics,
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
        self._wake = asyncio.Event()  # a file is ready now: settle without waiting for the tick

    def _rel(self, path: Path) -> str | None:
        try:
            rel = path.relative_to(self._root).as_posix()
        except ValueError:
            return None
        parts = rel.split("/")
        return rel if parts[0] in WATCHED and not any(_ignored(p) for p in parts[1:]) else None

    def _walk(self, rel: str) -> Iterator[str]:
        # os.walk skips what vanishes under it (a folder renamed mid-scan) and does not follow symlinked folders.
        for folder, dirs, names in os.walk(self._root / rel):
            dirs[:] = sorted(d for d in dirs if not _ignored(d))
            # A symlinked folder is listed (and refused), never followed.
            links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            dirs[:] = [d for d in dirs if d not in links]
            for name in sorted([*names, *links]):
                if (found := self._rel(Path(folder) / name)) is not None:
                    yield found

    def files(self) -> list[str]:
        return [rel for top in WATCHED for rel in self._walk(top)]

    def _stat(self, rel: str) -> tuple[int, float] | None:
        try:
            st = os.lstat(self._root / rel)
        except OSError:
            return None
        return st.st_size, st.st_mtime

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
        path = self._root / rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return await self._gone(rel, was_file)
        except OSError as exc:
            return await self._refuse(rel, None, "unreadable", f"is unreadable ({exc.strerror})")
        if stat.S_ISLNK(st.st_mode):
            log.warning("%s is a symlink to %s", rel, os.readlink(path), extra=doc_context(rel))
            return await self._refuse(
                rel, st, "symlink", "is a symlink; only regular files under the root are read"
            )
        if not path.resolve().is_relative_to(self._root):
            log.warning("%s resolves to %s", rel, path.resolve(), extra=doc_context(rel))
            return await self._refuse(
                rel, st, "outside", "resolves outside the root (a symlinked folder); not read"
            )
        if stat.S_ISDIR(st.st_mode):
            self.mark_tree(rel)  # a folder where a file was: what is under it is looked at one by one
            return 0
        if not stat.S_ISREG(st.st_mode):
            return await self._refuse(rel, st, "special", "is not a regular file (a FIFO, socket or device)")
        kind, writer = _kind(rel), writer_label(rel)
        self._metrics.documents_seen.labels(kind=kind, writer=writer).inc()
        data = b""
        if (
            st.st_size <= self._s.max_bytes
        ):  # an oversized file travels without its bytes; the parser rejects it
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return await self._gone(rel, was_file)
            except OSError as exc:
                return await self._refuse(rel, st, "unreadable", f"is unreadable ({exc.strerror})")
            if len(data) != st.st_size or self._stat(rel) != (st.st_size, st.st_mtime):
                self.mark(rel)  # it changed while being read: read it again once it is quiet
                return 0
        digest = hashlib.sha256(data).hexdigest() if data else f"size-{st.st_size}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest:
            self._ledger.acknowledge(rel, st.st_size, st.st_mtime, digest)
            return 0
        await self._send(RawFile(path=rel, content=data, size=st.st_size, mtime=st.st_mtime, sha256=digest))
        self._ledger.acknowledge(rel, st.st_size, st.st_mtime, digest)
        self._metrics.documents_published.labels(kind=kind, writer=writer).inc()
        self._metrics.watcher_lag.observe(max(0.0, self._clock() - st.st_mtime))
        log.info("published %s (%d bytes)", rel, st.st_size, extra=doc_context(rel))
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

    async def _refuse(self, rel: str, st: os.stat_result | None, label: RejectionCode, why: str) -> int:
        """Publish a refusal (no bytes) so that the worker lists the file as rejected; once per version."""
        size, mtime = (st.st_size, st.st_mtime) if st is not None else (0, self._clock())
        digest = f"refused-{label}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest and (entry[0], entry[1]) == (size, mtime):
            return 0
        log.warning("refused %s: it %s", rel, why, extra=doc_context(rel))
        self._metrics.documents_rejected.labels(reason=label).inc()
        await self._send(
            RawFile(
                path=rel,
                content=b"",
                size=size,
                mtime=mtime,
                sha256=digest,
                refused=f"it {why}",
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
            self._metrics.kafka_up.set(0)
            self._stale = self._renew is not None
            raise
        self._metrics.kafka_up.set(1)

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
            self._metrics.kafka_up.set(0)
            return False
        self._metrics.kafka_up.set(1)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Startup scan, then events, with a periodic rescan because watchfiles can drop events."""
        count = await self.scan()
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
    metrics = Metrics()
    producer = await started_producer(settings)
    metrics.kafka_up.set(1)
    ledger = Ledger(settings.ledger_file)
    watcher = Watcher(settings, producer, ledger, metrics, renew=lambda: started_producer(settings))
    try:
        if not follow:
            return await watcher.scan() + await watcher.drain()
        server = _serve_metrics(settings, metrics)
        try:
            await watcher.run(stop)
        finally:
            if server is not None:
                server.shutdown()
        return 0
    finally:
        ledger.close()
        await watcher.producer.stop()


def _serve_metrics(settings: Settings, metrics: Metrics) -> Any:
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(
            settings.watcher_metrics_port, settings.web_host, metrics.registry
        )
    except OSError as exc:
        log.warning(
            "watcher metrics not served on %s:%d: %s", settings.web_host, settings.watcher_metrics_port, exc
        )
        return None
    log.info("watcher metrics at http://%s:%d/metrics", settings.web_host, settings.watcher_metrics_port)
    return server
