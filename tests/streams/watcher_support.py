"""What the watcher tests share: a producer that acknowledges at once, and files written long ago."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from processors.models import RawFile
from processors.raw_record import MAGIC, read_raw


class FakeProducer:
    """Acknowledges everything at once and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[RawFile] = []

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
        assert value.startswith(MAGIC)  # the watcher writes v2
        self.sent.append(read_raw(value))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


def write_old(path: Path, text: str) -> Path:
    """A file last written an hour ago: quiet long since."""
    path.write_text(text, encoding="utf-8")
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    return path
