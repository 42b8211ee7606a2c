"""The watcher: publishes every new, changed or deleted file under the root to `predigest.raw`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import watchfiles
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from processors.labels import writer_label
from processors.models import RawFile
from sinks.ledger import Ledger
from sinks.metrics import Metrics
from streams import kafka_io
from streams.logs import doc_context
from streams.settings import Settings

log = logging.getLogger(__name__)

WATCHED = ("inbox", "paper_cards", "work-queue", "living")
PROBE_TIMEOUT_SECONDS = 10.0


def _ignored(name: str) -> bool:
    # Editors and writers park half-written files under such names before renaming them into place.
    return name.startswith(".") or name.endswith(("~", ".tmp", ".swp", ".part"))


def _kind(rel: str) -> str:
    return rel.split("/", 1)[0]


class Watcher:
    """Reads a file only once it has been quiet for `quiet_seconds`; the ledger moves only after an ack."""

    def __init__(
        self,
        settings: Settings,
        producer: AIOKafkaProducer,
        ledger: Ledger,
        metrics: Metrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._s = settings
        self._root = settings.root.resolve()
        self._producer = producer
        self._ledger = ledger
        self._metrics = metrics
        self._clock = clock
        self._pending: dict[str, tuple[int, float, float]] = {}
        self._topic = settings.kafka.topic("raw")

    def _rel(self, path: Path) -> str | None:
        try:
            rel = path.relative_to(self._root).as_posix()
        except ValueError:
            return None
        top = rel.split("/", 1)[0]
        return rel if top in WATCHED and not _ignored(path.name) else None

    def files(self) -> list[str]:
        found: list[str] = []
        for top in WATCHED:
            base = self._root / top
            if base.is_dir():
                found.extend(r for p in sorted(base.rglob("*")) if p.is_file() and (r := self._rel(p)))
        return found

    def mark(self, rel: str) -> None:
        """Note that a path changed; it is read once it stops changing."""
        try:
            st = (self._root / rel).stat()
        except FileNotFoundError:
            self._pending[rel] = (-1, 0.0, self._clock())
            return
        self._pending[rel] = (st.st_size, st.st_mtime, self._clock())

    async def settle(self, *, force: bool = False) -> int:
        """Publish every pending path that has been quiet long enough; returns how many were published."""
        published = 0
        now = self._clock()
        for rel, (size, mtime, since) in list(self._pending.items()):
            path = self._root / rel
            try:
                st = path.stat()
                current: tuple[int, float] = (st.st_size, st.st_mtime)
            except FileNotFoundError:
                current = (-1, 0.0)
            if current != (size, mtime):
                self._pending[rel] = (*current, now)
                continue
            if not force and now - since < self._s.quiet_seconds:
                continue
            del self._pending[rel]
            try:
                published += await self._publish(rel)
            except KafkaError as exc:
                # The ledger has not moved: keep the path pending and retry once the broker answers again.
                self._pending[rel] = (size, mtime, since)
                log.warning("Kafka unreachable, %s stays pending: %s", rel, exc, extra=doc_context(rel))
                break
        return published

    async def scan(self) -> int:
        """Compare the tree with the ledger: mark what changed or vanished, then publish it."""
        seen = set(self.files())
        for rel in sorted(seen):
            st = (self._root / rel).stat()
            entry = self._ledger.get(rel)
            if entry is None or entry[0] != st.st_size or entry[1] != st.st_mtime:
                self.mark(rel)
        for rel in sorted(self._ledger.paths() - seen):
            self.mark(rel)
        return await self.settle(force=True)

    async def _publish(self, rel: str) -> int:
        path = self._root / rel
        kind = _kind(rel)
        if not path.exists():
            if self._ledger.get(rel) is None:
                return 0
            raw = RawFile(path=rel, content=b"", size=0, mtime=self._clock(), sha256="", deleted=True)
            await self._send(raw)
            self._ledger.forget(rel)
            log.info("published deletion of %s", rel, extra=doc_context(rel))
            return 1
        resolved = path.resolve()
        if not resolved.is_relative_to(self._root):
            log.warning(
                "refusing %s: it resolves outside the root (%s)", rel, resolved, extra=doc_context(rel)
            )
            self._metrics.documents_rejected.labels(reason="outside").inc()
            return 0
        st = path.stat()
        writer = writer_label(rel)
        self._metrics.documents_seen.labels(kind=kind, writer=writer).inc()
        # An oversized file travels without its bytes so that the parser records the rejection.
        data = b"" if st.st_size > self._s.max_bytes else path.read_bytes()
        digest = hashlib.sha256(data).hexdigest() if data else f"size-{st.st_size}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest:
            self._ledger.acknowledge(rel, st.st_size, st.st_mtime, digest)
            return 0
        raw = RawFile(path=rel, content=data, size=st.st_size, mtime=st.st_mtime, sha256=digest)
        await self._send(raw)
        self._ledger.acknowledge(rel, st.st_size, st.st_mtime, digest)
        self._metrics.documents_published.labels(kind=kind, writer=writer).inc()
        self._metrics.watcher_lag.observe(max(0.0, self._clock() - st.st_mtime))
        log.info("published %s (%d bytes)", rel, st.st_size, extra=doc_context(rel))
        return 1

    async def _send(self, raw: RawFile) -> None:
        try:
            fut = await self._producer.send(
                self._topic, key=raw.path.encode(), value=raw.model_dump_json().encode()
            )
            await fut
        except KafkaError:
            self._metrics.kafka_up.set(0)
            raise
        self._metrics.kafka_up.set(1)

    async def probe(self) -> bool:
        """A metadata round trip, so that `predigest_kafka_up` stays true to life while nothing is sent."""
        try:
            await asyncio.wait_for(self._producer.client.fetch_all_metadata(), PROBE_TIMEOUT_SECONDS)
        except (KafkaError, TimeoutError, OSError) as exc:
            log.warning("Kafka unreachable: %s", exc)
            self._metrics.kafka_up.set(0)
            return False
        self._metrics.kafka_up.set(1)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Startup scan, then events, with a periodic rescan because watchfiles can drop events."""
        count = await self.scan()
        log.info("startup scan published %d file(s) from %s", count, self._root)
        watch_task = asyncio.create_task(self._watch(stop))
        last_rescan = last_probe = self._clock()
        try:
            while not stop.is_set():
                await self.settle()
                if self._clock() - last_rescan >= self._s.rescan_seconds:
                    await self.scan()
                    last_rescan = self._clock()
                if self._clock() - last_probe >= self._s.metrics_interval_seconds:
                    await self.probe()
                    last_probe = self._clock()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=0.2)
        finally:
            watch_task.cancel()

    async def _watch(self, stop: asyncio.Event) -> None:
        # The root itself is watched, so folders created later (or renamed) are seen without a restart.
        async for changes in watchfiles.awatch(self._root, stop_event=stop, debounce=200, step=50):
            for _change, name in changes:
                rel = self._rel(Path(name))
                if rel is not None and not Path(name).is_dir():
                    self.mark(rel)


async def publish_root(settings: Settings, *, follow: bool, stop: asyncio.Event) -> int:
    """Scan the root into `predigest.raw`; with follow, keep watching until stop is set."""
    metrics = Metrics()
    producer = kafka_io.make_producer(settings)
    await producer.start()
    metrics.kafka_up.set(1)  # start() has fetched the cluster's metadata
    ledger = Ledger(settings.ledger_file)
    try:
        watcher = Watcher(settings, producer, ledger, metrics)
        if not follow:
            return await watcher.scan()
        server = _serve_metrics(settings, metrics)
        try:
            await watcher.run(stop)
        finally:
            if server is not None:
                server.shutdown()
        return 0
    finally:
        ledger.close()
        await producer.stop()


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
