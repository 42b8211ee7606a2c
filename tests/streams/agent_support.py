"""One worker's agents and timers in process, without a broker: the real app, services and DuckDB state, with the
sends to the topics recorded instead of produced (Faust's `test_context()` feeds the agents)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn
from zoneinfo import ZoneInfo

import faust
import pytest
from faust.streams import Stream
from faust.types import EventT
from mode.threads import ServiceThread

from processors.briefing_parts import Part
from processors.dead_letters import DeadLetter
from processors.models import ControlCommand
from processors.raw_record import raw_record
from streams.agents import Agents, register_agents
from streams.app import faust_app
from streams.services import Services
from streams.settings import KafkaSettings, Settings
from streams.topics import Topics
from tests.clocks import ManualClock
from tests.streams.pipeline_support import raw_file

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
NOTE = "inbox/jay/2026-09-27-1000-kv.md"
TEXT = "# vLLM 推理\nKV cache serving for LLM inference, arXiv:2609.23130\n"

Records = list[tuple[bytes, bytes]]


@dataclass
class RecordedOutputs:
    """`streams.topics.Outputs` that keeps what the worker would have sent."""

    documents: list[tuple[bytes, bytes]] = field(default_factory=list)
    briefings: list[tuple[str, str]] = field(default_factory=list)
    commands: list[ControlCommand] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)

    async def forward(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        self.documents.extend(records)

    async def briefing(self, axis: str, parts: Iterable[Part]) -> None:
        self.briefings.append((axis, b"".join(p.value for p in parts).decode()))

    async def command(self, command: ControlCommand) -> ControlCommand:
        self.commands.append(command)
        return command

    async def dead(self, letters: Sequence[DeadLetter]) -> None:
        self.dead_letters.extend(letters)


@dataclass
class InProcessWorker:
    """What a test drives: the agents (through `test_context()`), the services and the recorded sends."""

    settings: Settings
    clock: ManualClock
    app: faust.App
    services: Services
    agents: Agents
    outputs: RecordedOutputs
    exits: list[int]  # the codes a failed batch's task stopped the worker with (failstop.halt in a worker)

    def close(self) -> None:
        """Close the state if a test opened it, and the event loop Faust made for a consumer it never started."""
        opened = self.services.pipeline.opened
        if opened is not None:
            opened.state.close()
        # The first stream a test iterates makes Faust build its consumer, whose thread makes an event loop in its
        # constructor and closes it only when the thread ends (mode-streaming 0.7): test_context() never starts it.
        thread = getattr(self.app._consumer, "_thread", None)
        if isinstance(thread, ServiceThread) and not thread.thread_loop.is_running():
            thread.thread_loop.close()

    def partition_of(self, axis: str) -> int:
        return self.services.ownership.partition_of(axis)

    def own(self, *axes: str, ready: bool = True) -> None:
        """Take the axes' partitions as an assignment would, caught up unless `ready` is False."""
        partitions = {self.partition_of(a) for a in axes}
        self.services.ownership.assign(partitions)
        if ready:
            for p in partitions:
                self.services.ownership.mark_ready(p)

    def metric(self, name: str, **labels: str) -> float:
        return self.services.metrics.registry.get_sample_value(name, labels) or 0.0


def in_process_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "root": tmp_path / "root",
        "state_dir": tmp_path / "state",
        "out_dir": tmp_path / "out",
        # Never dialled: nothing here starts a Kafka client. Eight partitions give each default axis its own.
        "kafka": KafkaSettings(bootstrap="127.0.0.1:9", partitions=8),
        "parse_processes": 0,  # parsed in the event loop, as the pool does with no processes
        "batch_seconds": 0.01,
        "flush_max_past_days": 36_600,
    }
    values.update(overrides)
    return Settings(**values)


def in_process_worker(settings: Settings, clock: ManualClock) -> InProcessWorker:
    """The app and services `create_app` builds, with recorded sends; no state is opened until used."""
    app = faust_app(settings)
    exits: list[int] = []

    def halt(code: int) -> NoReturn:
        exits.append(code)
        raise StepFailed(f"the worker would exit {code}")

    services = Services.build(settings, clock, stop=halt)
    outputs = RecordedOutputs()
    agents = register_agents(app, Topics.declare(app, settings), services, outputs)
    return InProcessWorker(settings, clock, app, services, agents, outputs, exits)


async def settled(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait for an agent's batch to be handled: `put` returns once the stream took the event, not after the body."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


def acks_recorded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets of every ack, whoever makes it, in the order made."""
    acked: list[int] = []
    real_ack = Stream.ack

    async def recorded_ack(self: Stream[bytes], event: EventT[bytes]) -> bool:
        acked.append(event.message.offset)
        return await real_ack(self, event)

    monkeypatch.setattr(Stream, "ack", recorded_ack)
    return acked


class StepFailed(Exception):
    """An agent step kept failing, or the dead-letter limit stopped the worker: the test fails there."""


Start = Callable[[Settings, ManualClock], InProcessWorker]


ONE_PARTITION = KafkaSettings(bootstrap="127.0.0.1:9", partitions=1)


def owning_worker(tmp_path: Path, start: Start, clock: ManualClock, **overrides: Any) -> InProcessWorker:
    """An in-process worker on one partition of every topic that owns every axis (a note is one record)."""
    worker = start(in_process_settings(tmp_path, kafka=ONE_PARTITION, **overrides), clock)
    worker.own(*[a.name for a in worker.settings.axes])
    return worker


def raw_value(path: str = NOTE, text: str = TEXT) -> bytes:
    """The raw record the watcher writes (v2)."""
    return raw_record(raw_file(path, text))


def raw_value_v1(path: str = NOTE, text: str = TEXT) -> bytes:
    """The raw record an older watcher wrote (v1, JSON): still in a topic during an upgrade, or replayed."""
    return raw_file(path, text).model_dump_json().encode()


async def parsed(worker: InProcessWorker, *raws: bytes) -> Records:
    """What the parse agent forwards for these raw values (raw offsets 0, 1, … within one agent run)."""
    before = len(worker.outputs.documents)
    async with worker.agents.parse.test_context() as agent:
        for value in raws:
            await agent.put(value, key=b"path")
        await settled(lambda: len(worker.outputs.documents) > before, "the documents records")
    return worker.outputs.documents[before:]
