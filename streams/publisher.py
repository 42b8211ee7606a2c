"""The watcher's files onto Kafka: each ready path read (streams/root_files.py), made a record, handed to the
producer; the acknowledgements awaited in order; the ledger moved for each one Kafka took."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from processors.metric_labels import writer_label
from processors.models import RawFile
from processors.quiet import Pending
from processors.root_paths import FileRefusal, fs_rel, top_folder
from sinks.ledger import Ledger
from sinks.metrics import WatcherMetrics
from streams import root_files
from streams.logs import doc_context
from streams.raw_producer import RawProducer

log = logging.getLogger(__name__)

BATCH_BYTES = 16 * 1024 * 1024  # file bytes in flight at once; what is left waits for the next batch


@dataclass
class _Record:
    """A record handed to the producer, and what its acknowledgement moves in the ledger."""

    raw: RawFile
    pending: Pending
    row: tuple[int, float, str] | None  # (size, mtime, sha256) to acknowledge; None: a deletion, forgotten
    refusal: FileRefusal | None = None
    detail: str = ""


@dataclass
class Outcome:
    """What publishing a batch came to, for the watcher to act on."""

    published: int = 0
    again: list[str] = field(default_factory=list)  # changed while read: look at it again
    folders: list[str] = field(default_factory=list)  # a folder where a file was
    unsent: list[tuple[str, Pending]] = field(
        default_factory=list
    )  # Kafka did not take them (error) or later
    deferred: bool = False  # the batch was full: the rest is in `unsent`, for the next one
    error: KafkaError | None = None


class Publisher:
    """Reads ready files and publishes them; the ledger moves only after Kafka's acknowledgement."""

    def __init__(
        self,
        root: Path,
        max_bytes: int,
        raw: RawProducer,
        ledger: Ledger,
        metrics: WatcherMetrics,
        clock: Callable[[], float],
        beat: Callable[[], None],
    ) -> None:
        self._root, self._max_bytes, self._raw = root, max_bytes, raw
        self._ledger, self._metrics, self._clock, self._beat = ledger, metrics, clock, beat

    async def publish(self, ready: list[tuple[str, Pending]]) -> Outcome:
        """Read each ready file and hand its record to the producer; then await the acknowledgements in order."""
        out = Outcome()
        sent: list[tuple[_Record, asyncio.Future[Any]]] = []
        size = 0
        for i, (rel, p) in enumerate(ready):
            self._beat()
            if size >= BATCH_BYTES:
                out.unsent.extend(ready[i:])
                out.deferred = True
                break
            record = self._prepare(rel, p, out)
            if record is None:
                continue
            try:
                sent.append((record, await self._raw.send(record.raw)))
            except KafkaError as exc:
                out.unsent.extend(ready[i:])
                out.error = exc
                break
            size += len(record.raw.content)
        for record, fut in sent:
            try:
                await fut
            except KafkaError as exc:
                self._raw.failed()
                out.unsent.append((record.raw.path, record.pending))
                out.error = exc
                continue
            self._raw.delivered()
            self._acknowledged(record)
            out.published += 1
        return out

    def _prepare(self, rel: str, p: Pending, out: Outcome) -> _Record | None:
        """The record a ready path becomes, or None when there is nothing to send."""
        # Opened without following links and read from the descriptor (streams/root_files.py): a symlink or a
        # FIFO swapped in after a check can neither leak an outside file nor block the watcher.
        read = root_files.read_file(self._root, rel, self._max_bytes)
        if isinstance(read, root_files.Missing):
            return self._gone(rel, p)
        if isinstance(read, root_files.Folder):
            out.folders.append(rel)
            # A file the ledger knows is gone as a file (a bad folder's own row, listed until 2026-12-07, too).
            return self._gone(rel, p) if self._ledger.get(rel) is not None else None
        if isinstance(read, root_files.Changed):  # changed while read, or replaced since it was opened
            out.again.append(rel)  # read what is there now once it is quiet
            return None
        if isinstance(read, root_files.Refused):
            if read.reason == "bad_name" and _was_read(self._ledger.get(rel)):
                # A note read under this key before 2026-12-07: a valid name that read as this one's escape, now
                # keyed apart. Its note deleted first (not left beside its copy at the new key), then the refusal.
                out.again.append(rel)
                return self._gone(rel, p)
            return self._refusal(rel, p, read)
        self._metrics.documents_seen.labels(kind=top_folder(rel), writer=writer_label(rel)).inc()
        data = read.data or b""  # an oversized file travels without its bytes; the parser rejects it
        digest = hashlib.sha256(data).hexdigest() if data else f"size-{read.size}"
        entry = self._ledger.get(rel)
        if entry is not None and entry[2] == digest:
            self._ledger.acknowledge(rel, read.size, read.mtime, digest)
            return None
        raw = RawFile(path=rel, content=data, size=read.size, mtime=read.mtime, sha256=digest)
        return _Record(raw, p, (read.size, read.mtime, digest))

    def _gone(self, rel: str, p: Pending) -> _Record | None:
        if self._ledger.get(rel) is not None:
            raw = RawFile(path=rel, content=b"", size=0, mtime=self._clock(), sha256="", deleted=True)
            return _Record(raw, p, None)
        if p.was_file:
            # Never read, never published: nothing of it can reach a briefing, so nothing is lost either.
            log.info("%s vanished before it could be read; nothing published", rel, extra=doc_context(rel))
            self._metrics.documents_rejected.labels(reason="vanished").inc()
        return None

    def _refusal(self, rel: str, p: Pending, refused: root_files.Refused) -> _Record | None:
        """A refusal (no bytes) so that the worker lists the file as rejected; once per version."""
        # The path's own stat, as the rescans compare it with the ledger (no content is read for it); under a
        # symlinked folder the link's own: nothing of an outside file leaves the root, not even its size and time.
        seen = root_files.lstat(self._root, rel)
        if refused.size is not None and refused.mtime is not None:
            size, mtime = refused.size, refused.mtime
        else:
            size, mtime = seen if seen is not None else (0, self._clock())
        digest = f"refused-{refused.reason}"
        entry = self._ledger.get(rel)
        # Not even stat'ed (a folder on its way not searchable): no version to tell from the last refusal, whose
        # stand-in time (now) made a new one at every rescan.
        unknown = seen is None and refused.size is None
        if entry is not None and entry[2] == digest and (unknown or (entry[0], entry[1]) == (size, mtime)):
            return None
        raw = root_files.refusal_record(rel, size, mtime, refused)
        return _Record(raw, p, (size, mtime, digest), refused.reason, refused.detail)

    def _acknowledged(self, record: _Record) -> None:
        """Kafka has the record: move the ledger, count and log it."""
        rel, ctx = record.raw.path, doc_context(record.raw.path)
        if record.row is None:
            self._ledger.forget(rel)
            log.info("published deletion of %s", rel, extra=ctx)
            return
        self._ledger.acknowledge(rel, *record.row)
        if record.refusal is not None:
            if record.refusal == "symlink":
                with contextlib.suppress(OSError):
                    link = f"{os.fspath(self._root)}/{fs_rel(rel)}"  # a name keyed escaped: its own on disk
                    log.warning("%s is a symlink to %s", rel, os.readlink(link), extra=ctx)
            log.warning("refused %s: it %s", rel, record.detail, extra=ctx)
            self._metrics.documents_rejected.labels(reason=record.refusal).inc()
            return
        self._metrics.documents_published.labels(kind=top_folder(rel), writer=writer_label(rel)).inc()
        self._metrics.watcher_lag.observe(max(0.0, self._clock() - record.raw.mtime))
        log.info("published %s (%d bytes)", rel, record.raw.size, extra=ctx)


def _was_read(entry: tuple[int, float, str] | None) -> bool:
    """True when the ledger's row is a note's (its bytes' digest), not a refusal's."""
    return entry is not None and not entry[2].startswith("refused-")
