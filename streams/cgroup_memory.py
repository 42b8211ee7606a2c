"""The memory a cgroup v2 limit leaves the process (a container's limit): there an untouched mapping always
succeeds and the kernel kills past the limit, so only the cgroup's own figures say whether memory is left."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class CgroupMemory:
    """One cgroup's `memory.max` and `memory.current` in bytes, and the part of the latter that is clean file cache
    (`memory.stat`), which the kernel reclaims, active or not, before it kills."""

    path: Path
    limit: int
    current: int
    reclaimable: int

    @property
    def headroom(self) -> int:
        """What the cgroup can still take before the kernel must kill."""
        return self.limit - (self.current - self.reclaimable)


@dataclass(frozen=True)
class Cgroups:
    """Where the cgroup v2 hierarchy is mounted and where the process's membership is read."""

    root: Path = CGROUP_ROOT
    membership: Path = SELF_CGROUP

    def tightest(self) -> CgroupMemory | None:
        """The limit with the least headroom among the process's cgroup v2 and its ancestors; None under cgroup
        v1 alone, outside any cgroup, or with no limit ("max") on the way up."""
        own = self._own()
        if own is None:
            return None
        parts = own.parts[1:]
        limits = [_memory_of(self.root.joinpath(*parts[:n])) for n in range(len(parts), -1, -1)]
        return min((m for m in limits if m is not None), key=lambda m: m.headroom, default=None)

    def _own(self) -> PurePosixPath | None:
        """The process's cgroup v2 path (the `0::` line), None without one or outside the mounted namespace."""
        try:
            lines = self.membership.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        for line in lines:
            if line.startswith("0::/"):
                own = PurePosixPath(line[3:])
                return None if ".." in own.parts else own
        return None


def _memory_of(folder: Path) -> CgroupMemory | None:
    """The cgroup's figures, None where it sets no limit or they cannot be read (its root has no `memory.max`)."""
    try:
        limit = (folder / "memory.max").read_text(encoding="ascii").strip()
        current = int((folder / "memory.current").read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None
    if not limit.isdigit():  # "max"
        return None
    return CgroupMemory(folder, int(limit), current, _clean_file_cache(folder))


def _clean_file_cache(folder: Path) -> int:
    """`memory.stat`'s file cache less shared memory (tmpfs: not reclaimable without swap) and pages still to be
    written; 0 where it cannot be read. Not inactive_file alone: a failed briefing's reads of the state file mark its
    pages active just before the check, and counting them as used stopped a worker that had room."""
    try:
        lines = (folder / "memory.stat").read_text(encoding="ascii").splitlines()
    except OSError:
        return 0
    stat = dict(line.partition(" ")[::2] for line in lines)
    figures = [stat.get(key, "0").strip() for key in ("file", "shmem", "file_dirty", "file_writeback")]
    if not all(f.isdigit() for f in figures):
        return 0
    file, shmem, dirty, writeback = map(int, figures)
    return max(0, file - shmem - dirty - writeback)
