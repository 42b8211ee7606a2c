"""The worker's C heap gives back what a batch freed, and reuses its pages while ingesting (streams.heap): each
case in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from streams import heap
from tests.clocks import ManualClock

pytestmark = pytest.mark.skipif(heap._libc() is None, reason="glibc's malloc only")

# A batch's large buffers (0.3 MB, as a documents record), one of them freed first as the worker's earlier
# batches did, then a smaller block allocated after them that pins the heap's top, then the batch freed.
LARGE_BLOCKS = """
first = b"x" * 1_000_000; del first
batch = [b"x" * 300_000 for _ in range(300)]
pin = b"x" * int("100000")  # not a constant the compiler folds
"""
# Notes' texts (20 KB: below any mmap threshold), with the same pin.
MID_BLOCKS = """
batch = [b"x" * 20_000 for _ in range(5_000)]
pin = b"x" * int("100000")  # not a constant the compiler folds
"""
# A window batch's large buffers one after the other (1 MB, as fetched batches and pickles), each written through.
REUSED_BLOCKS = """
for _ in range(200):
    block = bytearray(1_000_000)
    block[::4096] = b"x" * len(block[::4096])
    del block
"""
RESIDENT = """
def resident():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024
"""


def _freed_but_resident(setup: str, blocks: str, after: str = "") -> int:
    """MiB a fresh process still holds after allocating `blocks` and freeing the batch (then running `after`)."""
    code = "\n".join(
        [
            "import json",
            "from streams import heap",
            textwrap.dedent(RESIDENT),
            setup,
            "before = resident()",
            textwrap.dedent(blocks),
            "del batch",
            after,
            "print(json.dumps(resident() - before))",
        ]
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(json.loads(out.stdout))


def _page_faults(setup: str) -> int:
    """Minor page faults a fresh process takes for REUSED_BLOCKS after `setup`."""
    code = "\n".join(
        [
            "import json, resource",
            "from streams import heap",
            setup,
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt",
            textwrap.dedent(REUSED_BLOCKS),
            "print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))",
        ]
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(json.loads(out.stdout))


def test_large_buffers_freed_by_a_briefing_leave_the_worker() -> None:
    kept = _freed_but_resident("assert heap.set_thresholds(heap.BRIEFING)", LARGE_BLOCKS)
    assert kept < 20  # of the 90 MB the batch held


def test_the_ingest_reuses_the_pages_of_large_buffers() -> None:
    # 200 buffers of 1 MB: ~245 faults each when each is mapped anew, as with the briefing's thresholds.
    assert _page_faults("assert heap.set_thresholds(heap.BRIEFING)") > 20_000
    assert _page_faults("assert heap.keep_for_ingest()") < 2_000


def test_large_buffers_freed_while_ingesting_leave_at_the_trim() -> None:
    trim = "from tests.clocks import ManualClock\nassert heap.HeapTrim(ManualClock()).after_batch()"
    assert _freed_but_resident("assert heap.keep_for_ingest()", LARGE_BLOCKS) > 60  # until the trim
    assert _freed_but_resident("assert heap.keep_for_ingest()", LARGE_BLOCKS, after=trim) < 20


# A thread's batch (the decode's, the store's) freed at its arena's top: malloc_trim shrinks only the main heap's.
THREAD_BLOCKS = """
import threading
def work():
    held = [bytearray(1_000_000) for _ in range(60)]
    for block in held:
        block[::4096] = b"x" * len(block[::4096])
thread = threading.Thread(target=work)
thread.start()
thread.join()
batch = None
"""


def test_large_buffers_a_thread_freed_while_ingesting_leave_the_worker() -> None:
    # At a 64 MiB trim threshold the thread's arena kept its ~57 MiB free, into the next briefing.
    trim = "from tests.clocks import ManualClock\nassert heap.HeapTrim(ManualClock()).after_batch()"
    assert _freed_but_resident("assert heap.keep_for_ingest()", THREAD_BLOCKS, after=trim) < 20


def test_a_briefing_leaves_the_heap_of_a_process_that_does_not_ingest_alone() -> None:
    # A one-shot flush briefs without the worker's thresholds: glibc's own, which reuse large blocks, stay.
    assert _page_faults("with heap.briefing_heap():\n    pass") < 2_000


def test_a_briefing_runs_with_the_small_thresholds_and_the_ingest_gets_its_own_back() -> None:
    during = "assert heap.keep_for_ingest()\nbriefing = heap.briefing_heap()\nbriefing.__enter__()"
    assert _freed_but_resident(during, LARGE_BLOCKS) < 20
    after = "assert heap.keep_for_ingest()\nwith heap.briefing_heap():\n    pass"
    assert _page_faults(after) < 2_000


def test_a_small_window_is_briefed_with_the_ingests_thresholds() -> None:
    # Its blocks reused from the heap, not mapped and faulted one by one (~10 % of a 10k briefing's time).
    small = (
        "assert heap.keep_for_ingest()\nbriefing = heap.briefing_heap(heap.SMALL_AXIS)\nbriefing.__enter__()"
    )
    assert _page_faults(small) < 2_000
    large = "assert heap.keep_for_ingest()\nbriefing = heap.briefing_heap(heap.SMALL_AXIS + 1)\nbriefing.__enter__()"
    assert _freed_but_resident(large, LARGE_BLOCKS) < 20


def test_the_heap_keeps_large_buffers_without_the_fixed_threshold() -> None:
    # What the worker did before: glibc's threshold grew past the buffers, and the heap kept their pages.
    assert _freed_but_resident("", LARGE_BLOCKS) > 60


def test_a_trim_after_the_batch_gives_back_the_pages_of_small_buffers() -> None:
    trim = "\n".join(
        [
            "from tests.clocks import ManualClock",
            "assert heap.HeapTrim(ManualClock()).after_batch()",
        ]
    )
    assert _freed_but_resident("", MID_BLOCKS) > 30  # of 100 MB of notes' texts, freed
    assert _freed_but_resident("", MID_BLOCKS, after=trim) < 15


def test_trims_are_at_most_a_second_apart() -> None:
    clock = ManualClock()
    trim = heap.HeapTrim(clock)
    assert trim.after_batch()
    clock.advance(0.5)
    assert not trim.after_batch()  # a batch every 50 ms at a trickle does not pay a trim each
    clock.advance(0.5)
    assert trim.after_batch()


async def test_a_worker_gone_quiet_gets_the_trim_its_last_batch_skipped() -> None:
    clock = ManualClock()
    trim = heap.HeapTrim(clock)
    assert trim.after_batch()
    assert not await trim.when_quiet()  # nothing freed since
    clock.advance(0.5)
    assert not trim.after_batch()  # too soon: owed
    assert not await trim.when_quiet()
    clock.advance(0.4)
    assert not trim.after_batch()  # batches still end
    clock.advance(0.3)
    assert not await trim.when_quiet()  # due, but a batch ended 0.3 s ago: not in the middle of the next one
    clock.advance(0.7)
    assert await trim.when_quiet()
    clock.advance(5)
    assert not await trim.when_quiet()  # paid


def test_the_resident_set_is_read_in_mib() -> None:
    mib = heap.resident_mib()  # what the log says after a command ran out of memory
    assert mib is not None and 10 < mib < 64 * 1024
