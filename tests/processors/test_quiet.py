"""The quiet-period tracker: a file is read once it stopped changing, at once when renamed into place, and what a
writer changes now goes before what a rescan found."""

from __future__ import annotations

from processors.quiet import QuietTracker, changed_paths, under


def test_a_file_is_ready_once_unchanged_for_the_quiet_period() -> None:
    q = QuietTracker(1.0)
    q.mark("inbox/jay/a.md", (10, 5.0), now=100.0)
    assert q.check("inbox/jay/a.md", (10, 5.0), now=100.5) is None  # not quiet yet
    assert q.check("inbox/jay/a.md", (20, 6.0), now=100.9) is None  # it grew: the period starts again
    assert q.check("inbox/jay/a.md", (20, 6.0), now=101.5) is None
    ready = q.check("inbox/jay/a.md", (20, 6.0), now=102.0)
    assert ready is not None and (ready.size, ready.mtime, ready.was_file) == (20, 6.0, True)
    assert "inbox/jay/a.md" not in q and len(q) == 0


def test_a_file_renamed_into_place_is_ready_at_once_and_its_own_event_changes_nothing() -> None:
    q = QuietTracker(1.0)
    q.mark("inbox/jay/a.md", (10, 5.0), now=100.0, complete=True)
    q.mark("inbox/jay/a.md", (10, 5.0), now=100.1)  # watchfiles reports the rename as a plain change
    assert q.check("inbox/jay/a.md", (10, 5.0), now=100.1) is not None


def test_what_a_writer_changes_now_goes_before_the_rescans_backlog() -> None:
    q = QuietTracker(0.0)
    for i in range(1000):
        q.mark(f"inbox/jay/old-{i}.md", (1, 1.0), now=100.0, since=1.0, urgent=False)
    q.mark("inbox/tom/new.md", (1, 99.0), now=100.0)
    assert q.later == 1000
    due = q.due(10)
    assert due[0] == "inbox/tom/new.md" and len(due) == 10
    # A scan that finds a path a writer is changing does not demote it.
    q.mark("inbox/tom/new.md", (2, 99.5), now=100.0, since=99.5, urgent=False)
    assert q.due(1) == ["inbox/tom/new.md"]


def test_a_path_whose_send_failed_is_put_back_as_it_was() -> None:
    q = QuietTracker(1.0)
    q.mark("inbox/jay/a.md", (10, 5.0), now=100.0, urgent=False)
    p = q.check("inbox/jay/a.md", (10, 5.0), now=200.0)
    assert p is not None and len(q) == 0
    q.put_back("inbox/jay/a.md", p)
    assert q.later == 1 and q.check("inbox/jay/a.md", (10, 5.0), now=200.0) is p


def test_a_path_never_seen_as_a_file_is_not_a_vanished_file() -> None:
    q = QuietTracker(0.0)
    q.mark("inbox/jay/folder-event", None, now=1.0)
    p = q.check("inbox/jay/folder-event", None, now=2.0)
    assert p is not None and not p.was_file
    q.mark("inbox/jay/a.md", (1, 1.0), now=1.0)
    q.mark("inbox/jay/a.md", None, now=1.5)  # deleted before it was read
    p = q.check("inbox/jay/a.md", None, now=2.0)
    assert p is not None and p.was_file


def test_a_rescan_finds_new_changed_and_gone_paths_against_the_ledger() -> None:
    listing = {"inbox/a.md": (1, 1.0), "inbox/b.md": (2, 2.0), "inbox/new.md": (3, 3.0)}
    known = {"inbox/a.md": (1, 1.0), "inbox/b.md": (2, 1.5), "inbox/gone.md": (4, 4.0)}
    assert changed_paths(listing, known) == (
        [("inbox/b.md", (2, 2.0)), ("inbox/new.md", (3, 3.0))],
        ["inbox/gone.md"],
    )
    assert under("inbox/jay", ["inbox/jay/a.md", "inbox/jay-archive/b.md", "inbox/jay"]) == ["inbox/jay/a.md"]
