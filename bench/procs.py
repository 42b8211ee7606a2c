"""Processes of a benchmark run: peak RSS from /proc, CPU taken by others, worker start/stop, /metrics."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from streams.settings import Settings
from streams.worker_process import PROJECT, spawn_cli

HZ = os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    """VmHWM: the process's peak resident set so far (0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    m = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) / 1024 if m else 0.0


def child_pids(pid: int) -> list[int]:
    """The live children of a process (the worker's parse processes)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
    return out


class RssWatch:
    """Samples VmHWM of some processes every 0.2 s; VmHWM never falls, so the last sample is the peak."""

    def __init__(self) -> None:
        self.peaks: dict[str, float] = {}
        self._pids: dict[str, int] = {}
        self._parents: dict[str, int] = {}
        self._children: dict[str, dict[int, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def watch(self, name: str, pid: int, children: bool = False) -> None:
        """Watch a process; with children, also the sum of its children's peaks as `<name>_children`."""
        self._pids[name] = pid
        if children:
            self._parents[name] = pid

    def sample(self) -> None:
        for name, pid in list(self._pids.items()):
            self.peaks[name] = max(self.peaks.get(name, 0.0), peak_rss_mib(pid))
        for name, pid in list(self._parents.items()):
            seen = self._children.setdefault(name, {})
            for child in child_pids(pid):
                seen[child] = max(seen.get(child, 0.0), peak_rss_mib(child))
            self.peaks[f"{name}_children"] = sum(seen.values())

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.sample()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _jiffies(pid: int | str, children: bool = False) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    # fields[11:15] are utime, stime, cutime, cstime (stat fields 14-17)
    return sum(int(x) for x in fields[11 : 15 if children else 13])


def _our_jiffies(extra: list[int]) -> int:
    me = os.getpid()
    total = _jiffies(me, children=True)  # includes every child already waited for
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    total += _jiffies(entry.name)
    return total + sum(_jiffies(p) for p in extra)


def _busy_jiffies() -> int:
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(x) for x in cpu]
    return sum(values) - values[3] - values[4]  # all but idle and iowait


@dataclass
class CpuMeter:
    """How many cores other processes (not this harness, its children or the broker) used during a phase."""

    extra_pids: list[int] = field(default_factory=list)
    _t: float = 0.0
    _busy: int = 0
    _ours: int = 0

    def start(self) -> CpuMeter:
        self._t, self._busy, self._ours = time.monotonic(), _busy_jiffies(), _our_jiffies(self.extra_pids)
        return self

    def others_cores(self) -> float:
        dt = time.monotonic() - self._t
        busy = _busy_jiffies() - self._busy
        ours = _our_jiffies(self.extra_pids) - self._ours
        return round(max(0.0, (busy - ours) / HZ / dt), 2) if dt > 0 else 0.0


def spawn(
    settings: Settings, workdir: Path, name: str, *command: str, profile: Path | None = None
) -> subprocess.Popen[bytes]:
    """`predigest <command>` with these settings, optionally under pyinstrument (a session file); log to <name>.log."""
    prefix = ("-m", "pyinstrument", "-r", "pyisession", "-o", str(profile)) if profile is not None else ()
    return spawn_cli(settings, workdir, name, *command, prefix=prefix)


def wait_log(path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Until the process's log says `needle` (the Faust worker logs "Ready" once its agents run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(
                f"{path.name}: process exited; last lines:\n{path.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.2)
    raise TimeoutError(f"{path.name} did not log {needle!r} within {timeout:.0f}s")


def metric_sum(settings: Settings, name: str) -> float:
    """The sum over all label sets of one metric on the worker's /metrics (0 when unreachable)."""
    url = f"http://{settings.web_host}:{settings.web_port}/metrics"
    try:
        text = httpx.get(url, timeout=5.0).text
    except httpx.HTTPError:
        return 0.0
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                total += s.value
    return total


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def render_profile(session: Path, out: Path) -> None:
    """A pyinstrument session as text: the call tree of our frames.

    No flat view: pyinstrument's flat renderer adds every function's self time a second time under one `[self]` line.
    """
    with out.open("w") as f:
        subprocess.run(
            [sys.executable, "-m", "pyinstrument", "--load", str(session), "-r", "text"],
            stdout=f,
            check=True,
            cwd=PROJECT,
        )
