"""The headroom a cgroup v2 limit leaves the worker: the tightest limit on the way up from its own cgroup, its
clean file cache counted as free (the kernel reclaims it before it kills); none under cgroup v1 or without one."""

from __future__ import annotations

from pathlib import Path

from streams.cgroup_memory import Cgroups

MIB = 1 << 20


def _write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text)


def _cgroups(root: Path, own: str) -> Cgroups:
    (root / "self").write_text(f"0::{own}\n")
    return Cgroups(root=root / "fs", membership=root / "self")


def test_the_tightest_limit_on_the_way_up_is_the_one_judged(tmp_path: Path) -> None:
    # A pod's limit above its container's: the container has room, the pod does not.
    _write(tmp_path / "fs" / "pod", memory_max=f"{2048 * MIB}", memory_current=f"{2040 * MIB}")
    _write(tmp_path / "fs" / "pod" / "worker", memory_max=f"{1024 * MIB}", memory_current=f"{512 * MIB}")
    limit = _cgroups(tmp_path, "/pod/worker").tightest()
    assert limit is not None and limit.path == tmp_path / "fs" / "pod" and limit.headroom == 8 * MIB


def test_clean_file_cache_counts_as_headroom_active_or_not(tmp_path: Path) -> None:
    # The failed briefing read the state file just before: most of its cache is active. Shared memory and dirty
    # pages are not reclaimable at once.
    stat = (
        f"anon {600 * MIB}\nfile {400 * MIB}\nactive_file {300 * MIB}\ninactive_file {100 * MIB}\n"
        f"shmem {20 * MIB}\nfile_dirty {30 * MIB}\nfile_writeback {10 * MIB}\n"
    )
    _write(tmp_path / "fs", memory_max=f"{1024 * MIB}", memory_current=f"{1000 * MIB}", memory_stat=stat)
    limit = _cgroups(tmp_path, "/").tightest()
    assert limit is not None and limit.headroom == 364 * MIB


def test_no_limit_no_figures_or_a_cgroup_outside_the_namespace_is_none(tmp_path: Path) -> None:
    _write(tmp_path / "fs" / "a", memory_max="max\n", memory_current=f"{512 * MIB}")
    _write(tmp_path / "fs" / "b", memory_max=f"{1024 * MIB}")  # no memory.current
    _write(tmp_path / "fs", memory_max=f"{1024 * MIB}", memory_current=f"{1000 * MIB}")
    assert _cgroups(tmp_path, "/a").tightest() is not None  # the root's limit still counts
    (tmp_path / "fs" / "memory.max").unlink()  # a real hierarchy's root has none
    assert _cgroups(tmp_path, "/a").tightest() is None
    assert _cgroups(tmp_path, "/b").tightest() is None
    assert _cgroups(tmp_path, "/../../elsewhere").tightest() is None


def test_a_docker_scope_seen_from_the_hosts_namespace_is_found_in_the_whole_hierarchy(tmp_path: Path) -> None:
    # `--cgroupns=host`: the path names the scope from the host's root, and the mount shows the whole hierarchy.
    _write(tmp_path / "fs" / "system.slice", memory_max="max\n", memory_current=f"{9000 * MIB}")
    scope = tmp_path / "fs" / "system.slice" / "docker-abc.scope"
    _write(scope, memory_max=f"{1024 * MIB}", memory_current=f"{1000 * MIB}")
    limit = _cgroups(tmp_path, "/system.slice/docker-abc.scope").tightest()
    assert limit is not None and limit.path == scope and limit.headroom == 24 * MIB


def test_a_mount_of_the_containers_own_cgroup_alone_is_judged_under_a_hosts_path(tmp_path: Path) -> None:
    # The host's path in /proc/self/cgroup, but the mount shows only the container's cgroup: its root is that one.
    _write(tmp_path / "fs", memory_max=f"{1024 * MIB}", memory_current=f"{1000 * MIB}")
    limit = _cgroups(tmp_path, "/system.slice/docker-abc.scope").tightest()
    assert limit is not None and limit.path == tmp_path / "fs" and limit.headroom == 24 * MIB
