"""The routes the parse pool tests inject into its processes: apart from the tests, so that each process spawned
imports only these and the product's parse stage (the test module brought in the pipeline and its settings: ~0.6 s
of CPU more a process, several processes a test)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from multiprocessing import connection
from pathlib import Path

from processors.parse_stage import Routed, RouteParams, route_values
from streams import heap
from streams.parse_process import Route

POISON = 3  # the note a broken parser dies or hangs on


def dies_on_poison(
    values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    if any(offset == POISON for _, offset in values):
        os._exit(1)  # as an OOM kill would
    return route_values(values, params, seen_at)


def hangs_on_poison(
    values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    if any(offset == POISON for _, offset in values):
        time.sleep(3600)
    return route_values(values, params, seen_at)


def poisoned_at(
    broken: Route,
    poison: int,
    values: Sequence[tuple[bytes, int | None]],
    params: RouteParams,
    seen_at: datetime,
) -> list[Routed]:
    """`broken`, with its poisoned note at offset `poison`."""
    shifted = [(value, POISON if offset == poison else -1) for value, offset in values]
    if any(offset == POISON for _, offset in shifted):
        broken(shifted, params, seen_at)
    return route_values(values, params, seen_at)


def dies_in_turn(
    folder: Path, values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """Leaves in `folder` a file named for each process that routes a note. The older batch's poisoned note (10)
    dies at once, and alone once the younger batch's first note (40) started; the younger's (47) once `go` is."""
    (folder / str(os.getpid())).touch()
    [(_, offset)] = values
    if offset == 40:
        (folder / "younger").touch()
    if offset in (10, 47):
        if offset == 47 or (folder / "older").exists():
            wait_for(folder / ("go" if offset == 47 else "younger"))
        (folder / "older").touch()
        os._exit(1)  # as an OOM kill would
    return route_values(values, params, seen_at)


def slow_telling(
    folder: Path, values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """Leaves in `folder` a file named for each note's offset as it begins, and takes 50 ms a note."""
    for _, offset in values:
        (folder / str(offset)).touch()
    time.sleep(0.05)
    return route_values(values, params, seen_at)


def wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.01)


def hangs_on_poison_telling(
    folder: Path, values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """`hangs_on_poison`, leaving in `folder` a file named for each process that routes a note and `hung` as
    it hangs."""
    hangs = any(offset == POISON for _, offset in values)
    (folder / ("hung" if hangs else str(os.getpid()))).touch()
    return hangs_on_poison(values, params, seen_at)


def says_its_heap(
    values: Sequence[tuple[bytes, int | None]], params: RouteParams, at: datetime
) -> list[Routed]:
    """In a parse process: each note's path is the heap thresholds the process runs with."""
    return [Routed(path=repr(heap._Heap.thresholds)) for _ in values]


def says_its_niceness(
    values: Sequence[tuple[bytes, int | None]], params: RouteParams, at: datetime
) -> list[Routed]:
    """In a parse process: each note's path is how nice the process runs."""
    return [Routed(path=str(os.nice(0))) for _ in values]


def dies_sending_its_result_once(
    folder: Path, values: Sequence[tuple[bytes, int | None]], params: RouteParams, seen_at: datetime
) -> list[Routed]:
    """The first process to route the poisoned note dies halfway through sending its chunk's result (a SIGKILL
    then: the OOM killer's, an operator's), holding the lock the other processes send theirs under."""
    if any(offset == POISON for _, offset in values) and not (folder / "died").exists():
        (folder / "died").touch()
        send = connection.Connection._send  # type: ignore[attr-defined]  # the stdlib writes through it

        def halfway(
            self: connection.Connection, buf: bytes, write: Callable[[int, bytes], int] = os.write
        ) -> None:
            if len(buf) > 4:  # past the length: the reader waits for the rest
                send(self, buf[: len(buf) // 2])
                os._exit(1)
            send(self, buf)

        connection.Connection._send = halfway  # type: ignore[attr-defined]
    return route_values(values, params, seen_at)
