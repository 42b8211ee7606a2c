"""Helpers of the fault tests: a watcher process, writer bursts, the worker's state and offsets as they are."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import httpx
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from prometheus_client.parser import text_string_to_metric_families
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from streams import kafka_io
from streams.settings import Settings
from streams.worker_process import spawn_cli

WRITERS = ("jay", "tom", "spark")


def spawn_watcher(settings: Settings, workdir: Path, name: str = "watcher") -> subprocess.Popen[bytes]:
    """A real watcher process (`predigest watch`); its log is `<name>.log`."""
    return spawn_cli(settings, workdir, name, "watch")


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def metric(url: str, name: str, **labels: str) -> float | None:
    """One sample of a /metrics endpoint (summed over the other labels), or None while it is not up."""
    try:
        body = httpx.get(url, timeout=2.0).text
    except httpx.HTTPError:
        return None
    total = None
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total = (total or 0.0) + float(s.value)
    return total


def watcher_metrics(settings: Settings) -> str:
    return f"http://{settings.web_host}:{settings.watcher_metrics_port}/metrics"


def worker_metrics(settings: Settings) -> str:
    return f"http://{settings.web_host}:{settings.web_port}/metrics"


def note_text(writer: str, i: int) -> str:
    return f"# vLLM 推理笔记 {writer} {i}\n\nKV cache serving run {i} by {writer}: TTFT {i % 97} ms.\n"


def note_path(writer: str, i: int) -> str:
    return f"inbox/{writer}/2026-09-27-{1000 + i % 1200:04d}-burst-{i:04d}.md"


@dataclass
class Burst:
    """Writers writing notes concurrently, each into its own inbox folder."""

    root: Path
    per_writer: int
    pause: float
    threads: list[threading.Thread]

    @property
    def paths(self) -> set[str]:
        return {note_path(w, i) for w in WRITERS for i in range(self.per_writer)}

    def join(self, timeout: float = 120) -> None:
        for t in self.threads:
            t.join(timeout)
        assert not any(t.is_alive() for t in self.threads), "the writers did not finish"


def start_burst(root: Path, per_writer: int, pause: float) -> Burst:
    def write(writer: str) -> None:
        for i in range(per_writer):
            path = root / note_path(writer, i)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(note_text(writer, i), encoding="utf-8")
            time.sleep(pause)

    threads = [threading.Thread(target=write, args=(w,), daemon=True) for w in WRITERS]
    for t in threads:
        t.start()
    return Burst(root, per_writer, pause, threads)


@dataclass(frozen=True)
class Faulted:
    """An ingest a fault landed in with work left: its settings, every path it was given, its processes' folder."""

    settings: Settings
    paths: set[str]
    workdir: Path


# Two: a third try (48k notes) would outlast the restart's 120 s wait on a loaded machine, whose late kill lands after
# the end for another reason than speed; 12k notes all stored before a kill takes a worker ~10x today's.
WORK_LEFT_TRIES = 2


async def with_work_left(attempt: Callable[[int], Awaitable[Faulted | None]], per_writer: int) -> Faulted:
    """`attempt(n)` lands a fault in an ingest of n notes a writer, None if the ingest had ended first (the fault
    tested nothing: a fixed amount of work is all done before it on a fast enough machine). Then four times as many."""
    for tried in range(WORK_LEFT_TRIES):
        faulted = await attempt(per_writer * 4**tried)
        if faulted is not None:
            return faulted
    raise AssertionError(f"the ingest had ended before the fault {WORK_LEFT_TRIES} times: it tested nothing")


@dataclass(frozen=True)
class Row:
    axis: str
    path: str
    sha256: str
    current: bool


def state_rows(settings: Settings) -> list[Row]:
    """The worker's document rows, read from its DuckDB file (the worker must not be running)."""
    with contextlib.closing(duckdb.connect(str(settings.state_file), read_only=True)) as db:
        rows = db.execute("SELECT axis, path, sha256, current FROM documents ORDER BY path").fetchall()
    return [Row(str(a), str(p), str(h), bool(c)) for a, p, h, c in rows]


def assert_each_path_stored_once(rows: list[Row], paths: set[str], axis: str = "inference") -> None:
    """Every path has exactly one row, and it is current: nothing lost, nothing doubled."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.axis == axis:
            counts[r.path] = counts.get(r.path, 0) + 1
    missing = sorted(paths - set(counts))
    doubled = sorted(p for p, n in counts.items() if n != 1)
    assert not missing, f"{len(missing)} path(s) never reached the state, e.g. {missing[:5]}"
    assert not doubled, f"{len(doubled)} path(s) have more than one row, e.g. {doubled[:5]}"
    assert all(r.current for r in rows if r.path in paths and r.axis == axis)


COMMITTED_DEADLINE_SECONDS = 30.0


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, KafkaError) and exc.retriable


async def committed(settings: Settings, stage: str) -> int:
    """The worker group's committed offset on a one-partition stage topic (0 before the first commit).

    Right after a broker starts, the group coordinator is not there yet (GroupCoordinatorNotAvailableError) and a
    connection may be refused: such retriable errors are retried until COMMITTED_DEADLINE_SECONDS, then raised.
    """
    topic = settings.kafka.topic(stage)
    async for attempt in AsyncRetrying(
        retry=retry_if_exception(_retriable),
        stop=stop_after_delay(COMMITTED_DEADLINE_SECONDS),
        wait=wait_exponential(multiplier=0.2, max=2.0),
        reraise=True,
    ):
        with attempt:
            admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
            try:
                await admin.start()
                parts = await kafka_io.topic_partitions(admin, [topic])
                offsets = await admin.list_consumer_group_offsets(settings.app_id, partitions=parts)
            finally:
                await admin.close()
    meta = offsets.get(parts[0])
    return meta.offset if meta is not None and meta.offset >= 0 else 0


@contextlib.contextmanager
def printed_logs_on_failure(*logs: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        for log in logs:
            if log.exists():
                print(f"--- {log} ---\n" + log.read_text(errors="replace")[-4000:])  # noqa: T201
        raise
