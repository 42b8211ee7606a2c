"""Helpers shared by the integration tests: topic reads, a worker process, polling."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import Popen

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka_io
from streams.settings import Settings
from streams.worker_process import spawn_worker, stop_process

ZSTD = 4  # a record batch's codec (its attributes' low bits), KIP-110


def batch_codecs(kafka_data_dir: Path, topic: str) -> set[int]:
    """The codec of every record batch the broker stored for the topic (its log segments, format v2)."""
    out = set()
    for log in kafka_data_dir.glob(f"logs/{topic}-*/*.log"):
        data, at = log.read_bytes(), 0
        while at + 23 <= len(data):
            (length,) = struct.unpack_from(">i", data, at + 8)
            (attributes,) = struct.unpack_from(">h", data, at + 21)
            out.add(attributes & 0x07)
            at += 12 + length
    return out


async def read_topic(settings: Settings, stage: str) -> list[tuple[bytes | None, bytes]]:
    """Every record of a stage's topic, from the beginning to its current end."""
    topic = settings.kafka.topic(stage)
    admin_parts = await _partitions(settings, topic)
    consumer = AIOKafkaConsumer(
        **kafka_io.client_kwargs(settings), enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign(admin_parts)
        ends = await consumer.end_offsets(admin_parts)
        await consumer.seek_to_beginning(*admin_parts)
        out: list[tuple[bytes | None, bytes]] = []
        while [tp for tp in admin_parts if await consumer.position(tp) < ends[tp]]:
            batch = await consumer.getmany(timeout_ms=1000)
            for records in batch.values():
                out.extend((r.key, r.value) for r in records if r.value is not None)
        return out
    finally:
        await consumer.stop()


async def _partitions(settings: Settings, topic: str) -> list[TopicPartition]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
    await admin.start()
    try:
        return await kafka_io.topic_partitions(admin, [topic])
    finally:
        await admin.close()


async def raw_paths(settings: Settings) -> list[str]:
    """The keys (root-relative paths) of every record on the raw topic, in order."""
    return [key.decode() for key, _ in await read_topic(settings, "raw") if key]


async def until_raw_has(settings: Settings, wanted: set[str], timeout: float, what: str) -> list[str]:
    """Poll the raw topic until it holds every path in `wanted`; fail with `what` after `timeout`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        paths = await raw_paths(settings)
        if wanted <= set(paths):
            return paths
        assert asyncio.get_running_loop().time() < deadline, (
            f"{what}: {len(wanted - set(paths))} path(s) missing"
        )
        await asyncio.sleep(0.5)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


async def async_wait_for(
    predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.2
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def worker_url(settings: Settings, path: str) -> str:
    return f"http://{settings.web_host}:{settings.web_port}{path}"


def _healthy(settings: Settings) -> bool:
    try:
        return httpx.get(worker_url(settings, "/healthz"), timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def running_worker(settings: Settings, workdir: Path, name: str = "worker") -> Iterator[Popen[bytes]]:
    """A real `predigest worker` process; its log is printed when the block fails."""
    proc = spawn_worker(settings, workdir, name=name)
    try:
        wait_for(lambda: proc.poll() is not None or _healthy(settings), 90, "the worker's /healthz")
        assert proc.poll() is None, (workdir / f"{name}.log").read_text(errors="replace")[-3000:]
        yield proc
    except BaseException:
        log = workdir / f"{name}.log"
        if log.exists():
            print(f"--- {log} ---\n" + log.read_text(errors="replace")[-5000:])  # noqa: T201
        raise
    finally:
        stop_process(proc)


@contextlib.contextmanager
def holding(script: str, *args: str) -> Iterator[Popen[str]]:
    """A Python process running `script`, which prints `held` once it holds what it takes and reads its stdin to the
    end: held for the block, let go (its stdin closed) and waited for at its end."""
    argv = [sys.executable, "-c", script, *args]
    with subprocess.Popen(
        argv,
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        yield holder
        holder.stdin.close()
