"""One end-to-end run: `predigest backfill` → Kafka → worker agents → DuckDB, then a flush → briefing."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from bench import procs
from bench.archive import END
from processors.briefing_parts import Joiner
from processors.models import Briefing
from streams import kafka_io
from streams.control import send_command
from streams.settings import KafkaSettings, Settings
from streams.worker_process import PROJECT, dump_settings, free_port, spawn_cli, stop_process

LAG_POLL_S = 0.1  # the lag's zero is seen within this (and a reading's ~10 ms) of the worker's commit
AXIS = "inference"  # every generated note is about inference, so its window holds all N


def bench_settings(bootstrap: str, root: Path, workdir: Path, tag: str, **extra: Any) -> Settings:
    run = f"{tag}-{uuid4().hex[:6]}"
    values: dict[str, Any] = {
        "root": root,
        "state_dir": workdir / "state",
        "out_dir": workdir / "out",
        "app_id": f"bench-{run}",
        "kafka": KafkaSettings(bootstrap=bootstrap, topic_prefix=f"bench-{run}"),
        "web_port": free_port(),
        "watcher_metrics_port": free_port(),
        "close_enabled": False,
        "kafka_cache": PROJECT / ".cache" / "kafka",
    }
    values.update(extra)
    return Settings(**values)


@dataclass
class Ingest:
    """How the ingest went: seconds until every document was in DuckDB, or the cap."""

    backfill_s: float
    backfill_files_per_s: float
    done_s: float | None  # None: capped before the worker caught up
    elapsed_s: float
    notes_parsed: int  # raw records the worker's parse agent has committed
    rows_stored: float  # predigest_documents_stored_total at the end
    events: int  # records the parse agent put on the documents topic (a batch's notes of one partition each)


class _LagReader:
    """The worker group's raw and documents lag, over one admin client and consumer kept for the whole ingest.

    A fresh pair per reading cost 0.27-0.31 s under load (10-13 ms kept) and CPU beside the pipeline's.
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._raw, self._docs = settings.kafka.topic("raw"), settings.kafka.topic("documents")
        self._admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
        self._consumer = AIOKafkaConsumer(**kafka_io.client_kwargs(settings))
        self._parts: list[TopicPartition] = []

    async def __aenter__(self) -> _LagReader:
        await kafka_io.start_client(self._settings, self._admin)
        await kafka_io.start_client(self._settings, self._consumer)
        self._parts = await kafka_io.topic_partitions(self._admin, [self._raw, self._docs])
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()
        await self._admin.close()

    async def read(self) -> tuple[int, int]:
        """(raw lag, documents lag)."""
        lag = await kafka_io.lag_with(self._admin, self._consumer, self._settings.app_id, self._parts)
        raw_lag = sum(v for tp, v in lag.items() if tp.topic == self._raw)
        return raw_lag, sum(lag.values()) - raw_lag


async def _records(settings: Settings, stage: str) -> int:
    """Records on a stage's topic: the lag of a group that never committed."""
    lag = await kafka_io.group_lag(settings, f"nobody-{uuid4().hex[:6]}", [settings.kafka.topic(stage)])
    return sum(lag.values())


def ingest(settings: Settings, workdir: Path, cap_s: float, rss: procs.RssWatch) -> Ingest:
    """Start the backfill (a process of its own) and poll the worker group's lag until it reaches zero."""
    log = workdir / "backfill.log"
    t0 = time.monotonic()
    bf = spawn_cli(settings, workdir, "backfill", "backfill", "--root", str(settings.root))
    rss.watch("backfill", bf.pid)
    backfill_s, done_s = asyncio.run(_until_caught_up(settings, bf, t0, cap_s, rss))
    if bf.returncode:
        raise RuntimeError(f"backfill failed:\n{log.read_text()[-3000:]}")
    elapsed = time.monotonic() - t0
    if bf.poll() is None:
        stop_process(bf)
    m = re.search(r"published \(([\d.]+) MB, (\d+) files/s\)", log.read_text(errors="replace"))
    raw_lag = sum(
        asyncio.run(kafka_io.group_lag(settings, settings.app_id, [settings.kafka.topic("raw")])).values()
    )
    parsed = asyncio.run(_records(settings, "raw")) - raw_lag
    return Ingest(
        backfill_s=round(backfill_s or elapsed, 2),
        backfill_files_per_s=float(m.group(2)) if m else 0.0,
        done_s=round(done_s, 2) if done_s is not None else None,
        elapsed_s=round(elapsed, 2),
        notes_parsed=parsed,
        rows_stored=procs.metric_sum(settings, "predigest_documents_stored_total"),
        events=asyncio.run(_records(settings, "documents")),
    )


async def _until_caught_up(
    settings: Settings, bf: subprocess.Popen[bytes], t0: float, cap_s: float, rss: procs.RssWatch
) -> tuple[float | None, float | None]:
    """(seconds to the backfill's exit, seconds to the group's lag first read zero), each None if the cap came first."""
    backfill_s: float | None = None
    zero_since: float | None = None
    async with _LagReader(settings) as lags:
        while time.monotonic() - t0 < cap_s:
            await asyncio.sleep(LAG_POLL_S)
            if backfill_s is None and bf.poll() is not None:
                rss.sample()
                backfill_s = time.monotonic() - t0
                if bf.returncode != 0:
                    return backfill_s, None
            if backfill_s is None:
                continue
            at = time.monotonic() - t0  # when the reading was asked, not when it came back
            if await lags.read() == (0, 0):
                # Seen twice in a row: the parse agent may still have had a send in its buffer the first time.
                if zero_since is not None:
                    return backfill_s, zero_since
                zero_since = at
            else:
                zero_since = None
    return backfill_s, None


async def flush_and_wait(settings: Settings, timeout: float) -> tuple[float | None, int]:
    """Seconds from the flush command to its briefing on the briefings topic (None on timeout), and its sources."""
    consumer = AIOKafkaConsumer(
        settings.kafka.topic("briefings"),
        **kafka_io.client_kwargs(settings),
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=kafka_io.MAX_MESSAGE_BYTES,
        fetch_max_bytes=4 * kafka_io.MAX_MESSAGE_BYTES,
    )
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        t0 = time.monotonic()
        await send_command(settings, AXIS, "flush", END)
        async with asyncio.timeout(timeout):
            joiner = Joiner()  # a briefing over the message limit (100k sources) travels in parts
            async for msg in consumer:
                joined = joiner.feed(msg.offset, msg.value or b"", list(msg.headers))
                if joined is None:
                    continue
                # On the topic once its last part is here: reading its 10 MB (10k) back into a model is this
                # client's work, ~0.2 s at 10k, and is not timed.
                arrived = time.monotonic() - t0
                b = Briefing.model_validate_json(joined.value)
                if b.axis == AXIS and b.window.end == END:
                    return round(arrived, 2), len(b.sources)
    except TimeoutError:
        return None, 0
    finally:
        await consumer.stop()
    return None, 0


def briefing_in_process(settings: Settings, workdir: Path, timeout: float) -> dict[str, Any]:
    """Brief what the stopped worker stored, in a process of its own (bench/brief_state.py), with a timeout."""
    cfg = dump_settings(settings, workdir / "brief-settings.json")
    cmd = [sys.executable, "-m", "bench.brief_state", str(cfg), AXIS, END.isoformat()]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=PROJECT)
    peak = 0.0
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, procs.peak_rss_mib(proc.pid))
        time.sleep(0.2)
    if proc.poll() is None:
        stop_process(proc, timeout=5)
        return {"briefing_s": None, "briefing_rss_mib": round(peak, 1)}
    out = json.loads((proc.stdout.read() if proc.stdout else b"{}") or b"{}")
    return {**out, "briefing_rss_mib": round(peak, 1)}
