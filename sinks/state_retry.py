"""A state write run again when a reopen lost its commit (sinks/state.py): writes are idempotent (offsets claimed,
emissions keyed), so running one twice changes nothing."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from sinks.errors import SinkError
from sinks.state_reads import Serialised

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound=Serialised)


class CheckpointLost(SinkError):
    """The write was lost (with its checkpoint, or rolled back out of memory); with more memory it runs again."""


def retried(write: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Run a write again after CheckpointLost, holding the state's lock throughout."""

    @functools.wraps(write)
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            while True:
                try:
                    return write(self, *args, **kwargs)
                except CheckpointLost:
                    continue  # bounded: each loss doubled the memory, up to StateMemoryError

    return run
