"""The benchmark's own Kafka broker: started on a temporary data folder, its CPU counted as the harness's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from streams.kafka_local import start_broker, stop_broker
from streams.worker_process import PROJECT

KAFKA_CACHE = PROJECT / ".cache" / "kafka"


@dataclass(frozen=True)
class Broker:
    """A running local broker: its bootstrap and the pids whose CPU is ours when telling how busy the box was."""

    bootstrap: str
    data: Path
    pids: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, data: Path) -> Broker:
        bootstrap = start_broker(KAFKA_CACHE, data)
        return cls(bootstrap, data, [int((data / "kafka.pid").read_text())])

    def stop(self) -> None:
        stop_broker(KAFKA_CACHE, self.data)
