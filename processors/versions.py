"""Which version of a path is current and when a deletion wins: the state's rules, over plain data.

The versions of one path are ordered by the offset of their raw record (`predigest.raw` is keyed by path, so
that order is total; content cannot order them: a file can be restored to earlier bytes). A record without a
raw offset (a v1 record on a retained topic may lack one) is ordered by arrival. The latest record of a path
decides what a briefing sees of it: its current version, nothing (deleted), or its refusal (rejected, its stored
versions not briefed). `BatchPlan` applies a batch of documents records to what the state holds of the paths
they touch and says what to write.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime

from processors.wire import DocumentRecord

Key = tuple[str, str]  # (axis, path)
VersionKey = tuple[str, str, str]  # (axis, path, sha256)


@dataclass(slots=True)  # a few built per note: slots make them faster to build and to read
class Version:
    """One version of a path: the offset of its raw record and its arrival order."""

    raw_offset: int | None
    seq: int


@dataclass(frozen=True)
class Deletion:
    """The path was deleted at `deleted_at`, by the raw record at `raw_offset`."""

    deleted_at: datetime
    raw_offset: int | None


@dataclass(frozen=True)
class Refused:
    """The file at the path was refused by the raw record at `raw_offset`: what a briefing lists under rejected."""

    sha256: str
    reason: str
    code: str | None
    seen_at: datetime
    event_time: datetime | None  # the file's own time; None for a record that carried none
    raw_offset: int | None


class Outcome(enum.Enum):
    """What a document record did to its path."""

    REPLAY = "replay"  # a version already held, at the same or a later raw offset: nothing changes
    # stored, but older than the current version, or deleted or refused since it was written
    HIDDEN = "hidden"
    VISIBLE = "visible"  # stored and current: a briefing sees it


def newer(offset: int | None, than: int | None) -> bool:
    """Whether the record at raw offset `offset` comes after the one at `than`; without either, arrival does."""
    return offset is None or than is None or offset > than


def rank(v: Version) -> tuple[bool, int, int]:
    """The sort key of `current`: highest raw offset first, versions without one after, each by arrival."""
    return (v.raw_offset is not None, v.raw_offset or 0, v.seq)


@dataclass(slots=True)
class PathVersions:
    """What the state holds of one (axis, path): its versions by sha256, and its deletion or refusal, if any (the
    later of the two: each clears the other)."""

    versions: dict[str, Version] = field(default_factory=dict)
    deletion: Deletion | None = None
    refused: Refused | None = None

    def current(self) -> str | None:
        """The sha256 of the current version (deleted or not); None when the path has none."""
        if len(self.versions) < 2:  # none, or the one a new note has: nothing to rank
            return next(iter(self.versions), None)
        return max(self.versions.items(), key=lambda kv: rank(kv[1]))[0]

    def put(self, sha256: str, raw_offset: int | None, next_seq: Callable[[], int]) -> Outcome:
        """Apply a version of the path; a newer one clears an older deletion or refusal."""
        versions = self.versions
        v = versions.get(sha256)
        if v is None:
            versions[sha256] = Version(raw_offset, next_seq())
        elif raw_offset is not None and (v.raw_offset is None or raw_offset > v.raw_offset):
            v.raw_offset = raw_offset  # the same bytes again, later: a file restored to an earlier version
        else:
            return Outcome.REPLAY
        # A path's only version is its current one (a new note's, nearly every put), without ranking them.
        if len(versions) > 1 and self.current() != sha256:
            return Outcome.HIDDEN
        end = self.deletion or self.refused
        if end is not None:
            if not newer(raw_offset, end.raw_offset):
                return Outcome.HIDDEN  # deleted or refused since it was written (a replay brought it late)
            self.deletion = self.refused = None
        return Outcome.VISIBLE

    def delete(self, deleted_at: datetime, raw_offset: int | None) -> bool:
        """Apply a deletion; it wins over every version and refusal before it and none after. A refused file
        deleted is no longer listed; a path without versions keeps no deletion."""
        if not self._latest(raw_offset):
            return False
        cleared = self.refused is not None
        self.refused = None
        if self.versions:
            self.deletion = Deletion(deleted_at, raw_offset)
        return cleared or bool(self.versions)

    def refuse(self, refused: Refused) -> bool:
        """Apply a refusal of the file: it hides every version before it (the file on disk is no longer one) and
        is listed until a later record of the path (a version, the same bytes again included, or a deletion)."""
        if not self._latest(refused.raw_offset):
            return False
        self.deletion = None
        self.refused = refused
        return True

    def _latest(self, raw_offset: int | None) -> bool:
        """Whether a record at `raw_offset` comes after every version, deletion and refusal held."""
        newest = max((v.raw_offset for v in self.versions.values() if v.raw_offset is not None), default=None)
        end = self.deletion or self.refused
        return newer(raw_offset, newest) and (end is None or newer(raw_offset, end.raw_offset))


class BatchPlan:
    """A batch's outcome, worked out record by record from what the state holds of the touched paths.

    The sink reads the touched paths' versions, deletions and refusals, applies the batch here, then writes
    `new_versions`, `raised`, `current_of(touched)`, the changed deletions and refusals, and the `legacy` rows
    set-based.
    """

    def __init__(
        self, held: Mapping[Key, PathVersions], next_seq: Callable[[], int], legacy: Set[str] = frozenset()
    ) -> None:
        self.paths: dict[Key, PathVersions] = dict(held)
        self.stored = {(*k, sha) for k, p in held.items() for sha in p.versions}
        self.stored_paths = {k for k, p in held.items() if p.versions}
        self._next_seq = next_seq
        self._ended_before = {k: (p.deletion, p.refused) for k, p in held.items()}
        self.new_versions: dict[VersionKey, DocumentRecord] = {}  # the first record of each
        self.raised: dict[VersionKey, int] = {}  # stored versions whose raw offset rises
        self.touched: set[Key] = set()  # paths whose `current` flags are rewritten
        # A rejection without an axis (a record from before they went to every axis) is listed on every axis and
        # hides no version: the latest per path, until any record of the path with an axis supersedes it (a
        # state file of schema 8 or before keeps its rejections so too, sinks/schema.py).
        self.legacy: dict[str, Refused] = {}  # the rows to write
        self.legacy_dropped: set[str] = set()  # the paths whose row goes (before `legacy`'s are written)
        self._legacy_paths = set(legacy)  # the paths that may hold one

    def apply(self, record: DocumentRecord) -> bool:
        """Apply one record; whether a briefing sees what it brought (a version, or what it lists as rejected)."""
        h = record.header
        kind, axis = h.type, h.axis
        if self._legacy_paths and axis and h.path in self._legacy_paths:
            self._legacy_paths.discard(h.path)
            self.legacy.pop(h.path, None)
            self.legacy_dropped.add(h.path)
        if kind == "document" and record.stored is not None and axis:
            return self._document(axis, (h.path, h.sha256), h.raw_offset, record)
        if kind == "deletion" and axis:
            return self._path((axis, h.path)).delete(h.seen_at, h.raw_offset)
        if kind == "rejection":
            refused = Refused(
                h.sha256, h.reason or "rejected", h.reason_code, h.seen_at, h.event_time, h.raw_offset
            )
            if axis:
                return self._path((axis, h.path)).refuse(refused)
            self.legacy[h.path] = refused
            self._legacy_paths.add(h.path)
            return True
        return False  # an event for no axis

    def _path(self, key: Key) -> PathVersions:
        path = self.paths.get(key)
        if path is None:  # built only when missing: setdefault built one for every record
            path = self.paths[key] = PathVersions()
        return path

    def _document(
        self, axis: str, version: tuple[str, str], raw_offset: int | None, record: DocumentRecord
    ) -> bool:
        path_name, sha = version
        key = (axis, path_name)
        path = self._path(key)
        outcome = path.put(sha, raw_offset, self._next_seq)
        if outcome is Outcome.REPLAY:
            return False
        vkey = (axis, path_name, sha)
        if vkey in self.stored:
            assert raw_offset is not None, "only a raw offset raises a stored version"
            self.raised[vkey] = raw_offset
        else:
            self.new_versions.setdefault(vkey, record)
        self.touched.add(key)
        return outcome is Outcome.VISIBLE

    def current_of(self, key: Key) -> str:
        current = self.paths[key].current()
        assert current is not None, "a touched path has a version"
        return current

    def deletions_changed(self) -> dict[Key, Deletion | None]:
        """The deletions the batch set or cleared (None: the path is no longer deleted)."""
        return {k: p.deletion for k, p in self.paths.items() if p.deletion is not self._before(k)[0]}

    def refusals_changed(self) -> dict[Key, Refused | None]:
        """The refusals the batch set or cleared (None: the path is no longer listed as rejected on the axis)."""
        return {k: p.refused for k, p in self.paths.items() if p.refused is not self._before(k)[1]}

    def _before(self, key: Key) -> tuple[Deletion | None, Refused | None]:
        return self._ended_before.get(key, (None, None))
