"""A DuckDB close beside reads in other threads: the reads are interrupted until the close ends, and a close slow
with work of its own is waited for, not taken for a busy one."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from sinks.duck_close import AT_STOP, Patience, close_interrupting
from tests.sinks.conftest import HeldClose
from tests.state_support import a_long_read


def test_a_close_slower_than_its_interrupts_with_no_read_on_it_is_waited_for_and_said(
    held_close: HeldClose, caplog: pytest.LogCaptureFixture
) -> None:
    """DuckDB's own close outlasting the 0.2 s of interrupts (its checkpoint, a loaded machine): it was reported as
    not closed, as if a read held it, and the state's reopen raised StateBusyError."""
    db = duckdb.connect(":memory:")
    reader = db.cursor()
    assert close_interrupting(db, lambda: [reader], AT_STOP, "the test's database")
    assert held_close.said.is_set(), "the close was held past its interrupts"
    with pytest.raises(duckdb.ConnectionException):
        db.execute("SELECT 1")
    assert "the test's database has been closing for over 1 s, no read refusing it" in caplog.text


def test_a_read_begun_after_the_interrupts_budget_is_still_interrupted_and_the_close_ends(
    held_close: HeldClose, caplog: pytest.LogCaptureFixture
) -> None:
    """A read that starts on a cursor of the closing connection after 0.2 s of the close: no longer interrupted,
    it held the close (and a stop) until it ended, minutes at 100k."""
    db = duckdb.connect(":memory:")
    reader = db.cursor()
    started, ended = threading.Event(), threading.Event()

    def begin_a_read() -> None:  # at the closer's line, 1 s into the close, before DuckDB's close goes on
        threading.Thread(target=a_long_read, args=(reader, started, ended), daemon=True).start()
        started.wait()

    held_close.then = begin_a_read
    assert close_interrupting(db, lambda: [reader], AT_STOP, "the test's database")
    assert started.is_set(), "the read began during the close"
    assert ended.wait(30), "the read ran on after the close"


# 200 fresh databases (the unfixed close hung at the 3rd to 197th; on one database's cursors never in 600), each
# with threads to start and join: ~5 s of CPU but 88-132 s of wall at load 14-15 (the old 120 failed at 18-20).
@pytest.mark.timeout(400)
def test_closing_a_cursor_whose_read_is_only_starting_interrupts_it_and_does_not_wait_for_it() -> None:
    """A briefing cancelled as its read began: DuckDB's close blocked until the read (minutes at 100k) ended, the
    interrupt sent before it started lost, and the worker's event loop froze with it (1 in 4-12 before)."""
    # A read may refuse the close for up to 10 s, the bound asserted below, not the product's 0.2 s: a thread starved
    # that long at load 20 is the machine, and a lost interrupt still leaves the close waiting for a read that never
    # ends.
    patience = Patience(refused=1000, rounds=None)
    slowest = 0.0
    for _ in range(200):
        cursor = duckdb.connect(":memory:").cursor()
        started, ended = threading.Event(), threading.Event()
        threading.Thread(target=a_long_read, args=(cursor, started, ended), daemon=True).start()
        started.wait()
        began = time.monotonic()
        assert close_interrupting(cursor, patience=patience)
        slowest = max(slowest, time.monotonic() - began)
        assert ended.wait(30), "the read ran on after its cursor's close"
    assert slowest < 10, slowest  # the read alone takes minutes


def test_a_close_held_with_no_read_refusing_it_holds_the_event_loop_one_second_at_most_then_ends_in_its_thread(
    held_close: HeldClose, caplog: pytest.LogCaptureFixture
) -> None:
    """A write's reopen on the event loop, the invalidated connection's close slow with its own work: since only the
    rounds a read refused the close in counted, the loop waited for it however long (a close that never ends, for
    ever); 0.2 s before that. It gives up after 100 rounds, and the next call waits for the same close."""
    db = duckdb.connect(":memory:")
    reader = db.cursor()
    assert not close_interrupting(db, lambda: [reader], what="the test's database")
    assert not held_close.said.is_set(), "given up on while the close was still held"
    assert "has been closing for over 1 s" not in caplog.text  # its caller says what it gave up on
    held_close.said.set()  # DuckDB's own close ends
    assert close_interrupting(db, lambda: [reader], AT_STOP, "the test's database")
    with pytest.raises(duckdb.ConnectionException):
        db.execute("SELECT 1")
