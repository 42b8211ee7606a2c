"""The conductor's per-record check of Faust's producer buffer, without reading the app's settings each time.

Before handing each record to its agents, Faust's conductor awaits `ProducerBuffer.wait_until_ebb` (faust-streaming
0.15), whose `size` reads `app.conf.producer_threaded` through Faust's settings descriptors: 1.4 µs a record on
the event loop, for a buffer only `Topic.send_soon` (tables) fills, empty in this worker. Here the size is the
length of whichever queue holds the buffered messages, and a buffer past its limit is flushed by Faust's own
code, as before (docs/performance.md).
"""

from __future__ import annotations

from faust.transport.producer import ProducerBuffer

_faust_wait_until_ebb = ProducerBuffer.wait_until_ebb


async def wait_until_ebb(self: ProducerBuffer) -> None:
    """Faust's check: flush down to `max_messages` when more wait to be produced."""
    # `queue` is set only for a threaded producer (which then leaves `pending` empty), as Faust's `size` reads it.
    waiting = self.queue if self.queue is not None else self.pending
    if waiting.qsize() > self.max_messages:
        await _faust_wait_until_ebb(self)


def check_buffer_lightly() -> None:
    """Make every Faust producer buffer check its size this way from now on (idempotent)."""
    ProducerBuffer.wait_until_ebb = wait_until_ebb  # type: ignore[method-assign]
