"""Fixtures of the streams tests that drive in-process workers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import pytest

from streams.settings import Settings
from tests.clocks import ManualClock
from tests.streams.agent_support import InProcessWorker, Start, StepFailed, in_process_worker


@pytest.fixture
def start() -> Iterator[Start]:
    """Build in-process workers (a restart is another on the same settings), each closed after the test."""
    started: list[InProcessWorker] = []

    def build(settings: Settings, clock: ManualClock) -> InProcessWorker:
        started.append(in_process_worker(settings, clock))
        return started[-1]

    yield build
    for w in started:
        w.close()


@pytest.fixture
def stops(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The exit codes the dead-letter limit asked for; each stop raises, as the worker's would end it."""
    codes: list[int] = []

    def stop(code: int) -> NoReturn:
        codes.append(code)
        raise StepFailed(f"the worker would exit {code}")

    monkeypatch.setattr("streams.dead_letters.halt", stop)
    return codes
