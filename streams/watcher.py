"""The watcher: publishes every new, changed or deleted file under the root to `predigest.raw`.

Events (watchfiles, and inotify for renames) mark paths, and a path is read once it has been quiet
(processors.quiet). A rescan, because watchfiles can drop events, lists the tree in a thread and compares it
with the ledger's copy in memory: it never holds up the event path, and what it finds waits behind what events
found. Ready files go out in batches: every record handed to the producer, then the acknowledgements awaited,
then the ledger moved.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time  # thread_time: the CPU a rescan costs, not the time of day
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import watchfiles
from aiokafka import AIOKafkaProducer
from watchfiles._rust_notify import WatchfilesRustInternalError

from processors.quiet import Pending, QuietTracker, Stat, under
from processors.root_paths import WATCHED, text_rel, watched
from sinks.clock import SYSTEM_CLOCK, Clock
from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import kafka_io, root_files, watcher_web
from streams.errors import BrokerUnavailableError
from streams.publisher import Publisher
from streams.raw_producer import RawProducer
from streams.readyz import readyz_answer
from streams.renames import RenameWatch
from streams.rescans import Rescans
from streams.root_stats import stat_many
from streams.settings import Settings
from streams.tree_listing import Changes, TreeListing

log = logging.getLogger(__name__)

WATCH_PAUSE_MAX = 60.0  # the longest wait before watching again after watchfiles gave up on a name
SETTLE_TICK_SECONDS = 0.1  # how often quiet periods are checked; a file renamed into place wakes it at once
BATCH_FILES = 500  # files read and sent per pass: a new note waits behind one pass at most


class Watcher:
    """Reads a file only once it has been quiet for `quiet_seconds`; the ledger moves only after an ack."""

    def __init__(
        self,
        settings: Settings,
        producer: AIOKafkaProducer,
        ledger: Ledger,
        metrics: WatcherMetrics,
        clock: Clock = SYSTEM_CLOCK,
        renew: Callable[[], Awaitable[AIOKafkaProducer]] | None = None,
    ) -> None:
        self._s = settings
        self._clock = clock
        self._root = settings.root.resolve()
        self._raw = RawProducer(producer, settings.kafka.topic("raw"), metrics, self._now, renew)
        self._ledger = ledger
        self._metrics = metrics
        self._quiet = QuietTracker(settings.quiet_seconds)
        self._tree = TreeListing(self._root, WATCHED, settings.full_rescan_every)
        self._publisher = Publisher(
            self._root, settings.max_bytes, self._raw, ledger, metrics, self._now, self._beat
        )
        self.kafka_failed = False  # the last settle stopped on a Kafka error
        self.scanned = False  # the start-up scan is done: what was in the root at start is published
        self._more = False  # the last settle left ready files for the next pass
        self.events_lost = False  # watchfiles dropped a batch of events: the next rescan comes at once
        self._wake = asyncio.Event()  # a file is ready now: settle without waiting for the tick
        self._beat_at = self._now()
        self._beat()

    @property
    def producer(self) -> AIOKafkaProducer:
        return self._raw.producer

    def _now(self) -> float:
        """The clock's wall time in seconds since the epoch: what file mtimes and quiet periods are compared with."""
        return self._clock.now().timestamp()

    def _beat(self) -> None:
        """The loop made progress: what /healthz and predigest_watcher_loop_heartbeat_timestamp_seconds show."""
        self._beat_at = self._now()
        self._metrics.watcher_heartbeat.set(self._beat_at)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Healthy while the loop made progress within `watcher_stall_seconds` (read from the HTTP thread)."""
        age = max(0.0, self._now() - self._beat_at)
        ok = age <= self._s.watcher_stall_seconds
        return ok, {"status": "ok" if ok else "stalled", "heartbeat_age_seconds": round(age, 3)}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready when the loop is alive, Kafka answered last time and the start-up scan is done (`/readyz`)."""
        alive, health = self.health()
        checks = {
            "loop": {"ok": alive, "heartbeat_age_seconds": health["heartbeat_age_seconds"]},
            "kafka": {"ok": self._raw.up},
            "startup_scan": {"ok": self.scanned},
        }
        return readyz_answer(checks, self._metrics.ready)

    def _rel(self, path: Path) -> str | None:
        try:
            rel = text_rel(path.relative_to(self._root).as_posix())  # a name not UTF-8: as a rescan lists it
        except ValueError:
            return None
        return rel if watched(rel) else None

    def _stat(self, rel: str) -> Stat | None:
        return root_files.lstat(self._root, rel)

    def _stats(self, rels: list[str]) -> list[Stat | None]:
        """`_stat` of each path, their folders opened once (a settle looks at up to BATCH_FILES)."""
        return [None if st is None else (st.st_size, st.st_mtime) for st in stat_many(self._root, rels)]

    def mark(
        self, rel: str, *, since: float | None = None, complete: bool = False, urgent: bool = True
    ) -> None:
        """Note that a path changed; it is read once it stops changing, or at once if `complete`."""
        self._quiet.mark(rel, self._stat(rel), self._now(), since=since, complete=complete, urgent=urgent)

    def moved(self, path: Path) -> None:
        """A file was renamed into place: a writer finished it, so it is published without a quiet period."""
        rel = self._rel(path)
        if rel is not None:
            self.mark(rel, complete=True)
            self._wake.set()

    def mark_tree(self, rel: str) -> None:
        """A folder appeared, vanished or was renamed: every file under it, and every one known there before."""
        listed = (e.rel for e in root_files.walk(self._root, rel))
        known = self._ledger.known()
        own = [rel] if rel in known else []  # a note now a folder of its name: deleted (Publisher._prepare)
        for path in sorted({*own, *under(rel, known), *under(rel, self._quiet.paths()), *listed}):
            self.mark(path)

    async def settle(self, *, force: bool = False) -> int:
        """Publish the pending paths that have been quiet long enough, a batch at a time; how many went out."""
        now = self._now()
        self.kafka_failed = False
        due = self._quiet.due(BATCH_FILES)
        ready = []
        for rel, seen in zip(due, self._stats(due), strict=True):
            self._beat()
            p = self._quiet.check(rel, seen, now, force=force)
            if p is not None:
                ready.append((rel, p))
        self._more = len(due) >= BATCH_FILES
        return await self._publish(ready) if ready else 0

    async def scan(self) -> int:
        """Compare the tree with the ledger and mark what changed or vanished; publish what is quiet."""
        await self.rescan()
        return await self.settle()

    async def rescan(self, full: bool = False) -> tuple[int, int]:
        """List the tree in a thread and mark what differs from the ledger; (changed, gone) paths found."""
        began = self._clock.monotonic()
        # What is pending at the stat the listing has is left to its settle's stat (a first start: every note).
        found, cpu = await asyncio.to_thread(self._list, self._ledger.stats(), self._quiet.stats(), full)
        kind = "full" if found.full else "changed_folders"
        self._metrics.watcher_rescan.labels(kind).observe(self._clock.monotonic() - began)
        self._metrics.watcher_rescan_cpu.labels(kind).inc(cpu)
        self._metrics.watcher_files.set(found.files)
        changed, gone = found.changed, found.gone
        now = self._now()
        for rel, seen in changed:
            # A file untouched since its mtime has been quiet that long already; a growing one has not.
            self._quiet.mark(rel, seen, now, since=seen[1], urgent=False)
        # A file readable again keeps the size and time its refusal recorded (its mode changed), and its refusal
        # hides its stored text from every briefing: a full rescan looks at it (refused again only if it changed).
        ledger = self._ledger.known().items() if found.full else ()
        looked = [*gone, *(r for r, row in ledger if row[2] == root_files.UNREADABLE)]
        for rel, st in zip(looked, self._stats(looked), strict=True):
            self._quiet.mark(rel, st, now, urgent=False)
        self._beat()
        return len(changed), len(gone)

    def _list(self, known: dict[str, Stat], pending: dict[str, Stat], full: bool) -> tuple[Changes, float]:
        """In a thread: what changed against `known`, and the CPU time it took."""
        began = time.thread_time()
        found = self._tree.changes(known, full, pending)
        return found, time.thread_time() - began

    async def drain(self) -> int:
        """Publish everything pending, waiting for each file to be quiet (the one-shot scan)."""
        published = 0
        while self._quiet:
            published += await self.settle()
            self._ledger.flush_if_due()  # a refusal ends the one-shot scan: its files are sent again next time
            if self.kafka_failed:
                raise BrokerUnavailableError(
                    f"Kafka at {self._s.kafka.bootstrap} did not acknowledge the files"
                )
            if self._quiet and not self._more:
                await asyncio.sleep(min(0.1, self._s.quiet_seconds))
        return published  # the last acknowledgements are written by the ledger's close, its owner's

    async def _publish(self, ready: list[tuple[str, Pending]]) -> int:
        outcome = await self._publisher.publish(ready)
        for rel in outcome.again:
            self.mark(rel)  # changed while read, or replaced since opened: read it again once quiet
        for rel in outcome.folders:
            self.mark_tree(rel)  # a folder where a file was: what is under it is looked at one by one
        for rel, p in outcome.unsent:
            self._quiet.put_back(rel, p)  # the ledger has not moved: retried once the broker answers again
        self._more = self._more or outcome.deferred
        if outcome.error is not None:
            log.warning("Kafka unreachable, %d file(s) stay pending: %s", len(outcome.unsent), outcome.error)
            self.kafka_failed = True
        return outcome.published

    async def probe(self) -> bool:
        """A metadata round trip, so that `predigest_kafka_up` stays true to life while nothing is sent."""
        return await self._raw.probe()

    async def run(self, stop: asyncio.Event) -> None:
        """Startup scan, then events, with a periodic rescan because watchfiles can drop events."""
        started = self._now()
        changed, gone = await self.rescan()
        log.info("startup scan of %s: %d new or changed file(s), %d gone", self._root, changed, gone)
        watch_task = asyncio.create_task(self._watch(stop))
        # Its own task: a send blocked on a dead broker must not keep the gauge at 1.
        probe_task = asyncio.create_task(self._probe_every(stop))
        renames = RenameWatch(self._root, WATCHED, self.moved)
        renames.start()
        rescans = Rescans(self, self._s.rescan_seconds, self._now)
        backlog, published = True, 0
        try:
            while not stop.is_set():
                self._beat()
                self._wake.clear()
                published += await self.settle()
                self._flush_ledger()
                if backlog and not self._quiet.later:
                    log.info(
                        "startup scan published %d file(s) in %.1fs; %d waiting to be quiet",
                        published,
                        self._now() - started,
                        len(self._quiet),
                    )
                    backlog = False
                    self.scanned = True
                rescans.step()
                if self._more and not self.kafka_failed:
                    await asyncio.sleep(0)  # more are ready: the next pass at once, events first
                else:
                    await self._pause(stop)
        finally:
            rescans.cancel()
            renames.close()
            watch_task.cancel()
            probe_task.cancel()  # the ledger's close, its owner's, writes the last acknowledgements: one try

    def _flush_ledger(self) -> None:
        """The ledger's due flush; one DuckDB refuses is said and counted, and the watcher goes on publishing: the
        ledger keeps those rows for its next flush."""
        try:
            self._ledger.flush_if_due()
        except LedgerWriteError as exc:
            self._metrics.ledger_write_failures.inc()
            log.error("%s", exc)

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
        pause = 0.5
        while not stop.is_set():
            began = self._clock.monotonic()
            try:
                async for changes in watchfiles.awatch(self._root, stop_event=stop, debounce=200, step=50):
                    self._changed(changes)
            except* WatchfilesRustInternalError as lost:
                # A name that is not UTF-8 ends watchfiles' watch, its batch of events lost: the watch starts
                # again, then a rescan finds what they named (that file refused under its escaped name) and
                # what changed while no watch ran (the new one is up before this task yields to the rescans).
                # Such a file written on and on ends each new watch at once: wait twice as long each time
                # (each start walks the whole root), up to a minute.
                if self._clock.monotonic() - began > WATCH_PAUSE_MAX:
                    pause = 0.5  # the last watch lived: this is a new name, not the same one again
                pause = min(pause * 2, WATCH_PAUSE_MAX)
                log.warning(
                    "file events lost, rescanning once the watch is back in %.0f s: %s",
                    pause,
                    lost.exceptions[0],
                )
                await asyncio.sleep(pause)
                self.events_lost = True

    def _changed(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
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
        return self._ledger.has_folder(rel) or bool(under(rel, self._quiet.paths()))


async def started_producer(settings: Settings) -> AIOKafkaProducer:
    """An idempotent producer, started (start() fetches the cluster's metadata, so it fails while Kafka is away)."""
    producer = kafka_io.make_producer(settings)
    try:
        await producer.start()
    except BaseException:
        await producer.stop()
        raise
    return producer


async def publish_root(
    settings: Settings, *, follow: bool, stop: asyncio.Event, ledger: Ledger | None = None
) -> int:
    """Scan the root into `predigest.raw`; with follow, keep watching until stop is set. `ledger`: the one its
    caller opened (`predigest watch` and `run`, before Kafka), closed here; else opened here."""
    metrics = WatcherMetrics()
    # First, as the backfill does: a second watcher on this ledger is refused with nothing started (its producer
    # was left unclosed, which asyncio said in a second ERROR line).
    ledger = Ledger(settings.ledger_file) if ledger is None else ledger
    try:
        producer = await started_producer(settings)
    except BaseException:
        ledger.close(write=False)  # nothing acknowledged yet
        raise
    metrics.kafka_up.set(1)
    watcher = Watcher(settings, producer, ledger, metrics, renew=lambda: started_producer(settings))
    refused = False  # the one-shot scan's flush was refused: the close says it, without a second try
    try:
        if not follow:
            try:
                return await watcher.scan() + await watcher.drain()
            except LedgerWriteError:
                refused = True
                raise
        checks = {"/healthz": watcher.health, "/readyz": watcher.readiness}
        server = watcher_web.serve(settings.web_host, settings.watcher_metrics_port, metrics, checks)
        try:
            await watcher.run(stop)
        finally:
            if server is not None:
                server.shutdown()
                server.server_close()  # the listening socket too, not only the serving thread
        return 0
    finally:
        try:
            ledger.close(write=not refused)  # a refused last write raises, the producer stopped all the same
        finally:
            await watcher.producer.stop()
