"""Whether the window agent has been quiet: no batch being stored, nothing received or stored for a while.

The state's vacuum waits for such a moment (streams.state_vacuum): a batch stored meanwhile would wait for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sinks import collector
from sinks.clock import Clock


class IngestActivity:
    """When the window agent last received a record or stored a batch, and how many batches it is handling."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        # From the state's opening: a restart's catch-up is a backlog, whose batches follow at once.
        self._at = clock.monotonic()
        self._handling = 0

    def stirred(self) -> None:
        """A record came in or a batch was stored (a catch-up's too; a store's thread may call it)."""
        self._at = self._clock.monotonic()

    @contextmanager
    def handling(self) -> Iterator[None]:
        """A batch taken from the topic, until it is stored: a burst's first batch lingers, decodes and waits for
        its partitions' catch-up before its store ends, all of which the vacuum must not start beside."""
        self.taken()
        try:
            yield
        finally:
            self.done()

    def taken(self) -> None:
        """A batch in hand until `done`; Python's collector runs young collections rarer meanwhile
        (sinks.collector)."""
        self._handling += 1
        self.stirred()
        collector.flow_began()

    def done(self) -> None:
        self._handling -= 1
        self.stirred()
        collector.flow_ended()

    def quiet_for(self, seconds: float) -> bool:
        """No batch being handled, and none received or stored for `seconds`."""
        return self._handling == 0 and self._clock.monotonic() - self._at >= seconds
