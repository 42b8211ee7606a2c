"""What the watcher tests share: a producer that acknowledges at once, files written long ago, and a count of the
opens its stats make."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name `os.open` is called with from now on (the real call still made)."""
    opened: list[str] = []
    real: Callable[..., int] = os.open

    def counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    return opened
