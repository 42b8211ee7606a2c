"""When a changed file may be read: once it has been quiet for the quiet period (watchfiles has no close-write
event), at once when a writer renamed it into place; and what a rescan finds changed against the ledger.

Pure bookkeeping over (size, mtime) observations; the watcher does the stat calls and the reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

Stat = tuple[int, float]  # (size, mtime) of the path itself; None where the path is not there
GONE: Stat = (-1, 0.0)


@dataclass
class Pending:
    """A path that changed: its last observed (size, mtime), since when, and whether it was ever a file."""

    size: int  # -1: not there
    mtime: float
    since: float
    was_file: bool
    complete: bool = False  # renamed into place (IN_MOVED_TO) and unchanged since: no quiet period needed
    urgent: bool = True  # seen by an event (a writer, now); what a rescan found waits behind these


class QuietTracker:
    """The changed paths, each ready once unchanged for `quiet_seconds`; urgent ones are looked at first."""

    def __init__(self, quiet_seconds: float) -> None:
        self._quiet = quiet_seconds
        self._urgent: dict[str, Pending] = {}
        self._later: dict[str, Pending] = {}  # from a scan: maybe 100,000 of them after a first start

    def __len__(self) -> int:
        return len(self._urgent) + len(self._later)

    def __contains__(self, rel: str) -> bool:
        return rel in self._urgent or rel in self._later

    @property
    def later(self) -> int:
        """How many paths a scan found wait (not yet read)."""
        return len(self._later)

    def paths(self) -> Iterator[str]:
        yield from self._urgent
        yield from self._later

    def stats(self) -> dict[str, Stat]:
        """Each pending path's last observed (size, mtime); a copy, for a rescan's thread."""
        out = {rel: (p.size, p.mtime) for rel, p in self._later.items()}
        out.update((rel, (p.size, p.mtime)) for rel, p in self._urgent.items())
        return out

    def get(self, rel: str) -> Pending | None:
        return self._urgent.get(rel) or self._later.get(rel)

    def mark(
        self,
        rel: str,
        seen: Stat | None,
        now: float,
        *,
        since: float | None = None,
        complete: bool = False,
        urgent: bool = True,
    ) -> None:
        """The path changed (it is `seen` now); it is read once it stops changing, or at once if `complete`."""
        before = self.get(rel)
        size, mtime = seen if seen is not None else GONE
        if before is not None and before.complete and (before.size, before.mtime) == (size, mtime):
            return  # watchfiles' own event for the rename: the file is still the complete one
        was_file = seen is not None or (before is not None and before.was_file)
        urgent = urgent or (before is not None and before.urgent)
        since = now if since is None else min(since, now)
        self._drop(rel)
        queue = self._urgent if urgent else self._later
        queue[rel] = Pending(size, mtime, since, was_file, complete and seen is not None, urgent)

    def put_back(self, rel: str, pending: Pending) -> None:
        """A path whose publishing failed (Kafka away): pending again as it was, to be retried."""
        self._drop(rel)
        (self._urgent if pending.urgent else self._later)[rel] = pending

    def due(self, limit: int) -> list[str]:
        """Up to `limit` paths to look at now: every urgent one first, then the oldest found by a scan."""
        out = list(self._urgent)
        for rel in self._later:
            if len(out) >= limit:
                break
            out.append(rel)
        return out

    def check(self, rel: str, current: Stat | None, now: float, *, force: bool = False) -> Pending | None:
        """Record the path's current stat; the Pending (no longer tracked) when it may be read now, else None."""
        p = self.get(rel)
        if p is None:
            return None
        seen = current if current is not None else GONE
        if seen != (p.size, p.mtime):
            p.size, p.mtime, p.since, p.complete = seen[0], seen[1], now, False
            p.was_file = p.was_file or seen[0] >= 0
            return None
        if not force and not p.complete and now - p.since < self._quiet:
            return None
        self._drop(rel)
        return p

    def _drop(self, rel: str) -> None:
        self._urgent.pop(rel, None)
        self._later.pop(rel, None)


def changed_paths(
    listing: Mapping[str, Stat], known: Mapping[str, Stat]
) -> tuple[list[tuple[str, Stat]], list[str]]:
    """What a scan found against the ledger: (paths new or changed, with their stat), and paths gone; sorted."""
    # A loop, not a set difference of the items: hashing 100,000 (path, (size, mtime)) pairs costs more.
    changed = [(rel, st) for rel, st in listing.items() if known.get(rel) != st]
    gone = [rel for rel in known if rel not in listing]
    return sorted(changed), sorted(gone)


def under(folder: str, paths: Iterable[str]) -> list[str]:
    """The paths below `folder`."""
    prefix = f"{folder}/"
    return [p for p in paths if p.startswith(prefix)]
