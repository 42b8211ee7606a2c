"""What the backfill sends and in which order: its walk yields the paths sorted, chunk by chunk, as it goes."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import root_files
from streams.backfill_todo import Todo, walk

# '-' (0x2D) and '.' (0x2E) come before '/' (0x2F): "a-b" and "a.b" sort before "a/…", "a0" after it.
NAMES = (
    "inbox/a-",
    "inbox/a-b/n.md",
    "inbox/a.b",
    "inbox/a/x.md",
    "inbox/a/b-c/y.md",
    "inbox/a/b/z.md",
    "inbox/a/b.md",
    "inbox/a0/w.md",
    "inbox/a b.md",
    "inbox/B.md",
    "living/risk.md",
    "paper_cards/2601.00001.md",
    "work-queue/q-1/a.md",
    "work-queue/q.md",
    "work-queue/q/b.md",
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for rel in NAMES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    (tmp_path / "inbox/a/.draft.md.swp").write_text("editor scratch")  # ignored, as the watcher ignores it
    return tmp_path


def test_the_walk_yields_every_path_in_the_sorted_order(root: Path) -> None:
    # What the backfill sorted after a whole walk before: the same archive still backfills the same way.
    old = sorted(
        (c for top in ("inbox", "paper_cards", "work-queue", "living") for c in root_files.walk(root, top)),
        key=lambda c: c.rel,
    )
    assert [c.rel for c in old] == sorted(NAMES)
    assert list(walk(root)) == old


# Characters on both sides of '/' (0x2F), both cases, an accent composed and decomposed, beyond the BMP.
_PIECES = ["a", "A", "-", ".", "!", " ", "0", "~", "\u00e9", "e\u0301", "\U0001f600"]
_NAME = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3).map("".join)


@settings(max_examples=40)
@given(st.lists(st.lists(_NAME.filter(lambda n: n.strip(".") != ""), min_size=1, max_size=3), max_size=25))
def test_any_tree_is_walked_in_the_order_a_sort_of_its_paths_gives(paths: list[list[str]]) -> None:
    # Each list is a path under inbox/: folders, then a file (none where a file already took a folder's name).
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for parts in paths:
            leaf = root.joinpath("inbox", *parts)
            with contextlib.suppress(FileExistsError, NotADirectoryError):
                leaf.parent.mkdir(parents=True, exist_ok=True)
                if not leaf.exists():
                    leaf.write_text(parts[-1])
        assert list(walk(root)) == sorted(root_files.walk(root, "inbox"), key=lambda c: c.rel)


async def _chunks(todo: Todo, pool: ThreadPoolExecutor) -> list[list[str]]:
    chunks = []
    with todo.walking(pool):
        while chunk := await todo.next():
            chunks.append([c.rel for c in chunk])
    return chunks


async def test_chunks_come_in_order_without_the_acknowledged_and_the_total_once_telling(root: Path) -> None:
    same, touched = root / "inbox/a/x.md", root / "living/risk.md"
    known = {
        "inbox/a/x.md": (same.stat().st_size, same.stat().st_mtime, "sha"),  # acknowledged as it is: skipped
        "living/risk.md": (
            touched.stat().st_size,
            touched.stat().st_mtime - 60,
            "sha",
        ),  # changed since: sent
    }
    totals: list[tuple[int, int, int, int]] = []
    todo = Todo(root, known, 4, lambda t: totals.append((t.files, t.skipped, t.count, t.size)))
    with ThreadPoolExecutor(1) as pool:
        chunks = await _chunks(todo, pool)
    sent = sorted(set(NAMES) - {"inbox/a/x.md"})
    assert chunks == [sent[i : i + 4] for i in range(0, len(sent), 4)]
    assert totals == []  # walked, but Kafka has not answered yet: a refusal would be the only line
    todo.start_telling()
    assert totals == [(len(NAMES), 1, len(sent), sum(len(rel) for rel in sent))]


async def test_a_walk_that_fails_raises_where_the_next_chunk_is_awaited(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = root_files.list_folder

    def fails(at: Path, rel: str) -> tuple[list[root_files.Entry], list[str]]:
        if rel == "living":
            raise RuntimeError("a bug")
        return real(at, rel)

    monkeypatch.setattr(root_files, "list_folder", fails)
    todo = Todo(root, {}, 100, lambda t: None)
    with ThreadPoolExecutor(1) as pool, pytest.raises(RuntimeError, match="a bug"):
        await asyncio.wait_for(_chunks(todo, pool), 10)


async def test_a_backfill_that_ends_early_stops_its_walk(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real, held = root_files.list_folder, threading.Event()

    def slow(at: Path, rel: str) -> tuple[list[root_files.Entry], list[str]]:
        if rel == "living":  # the walk is still going when the backfill ends
            held.wait(10)
        return real(at, rel)

    monkeypatch.setattr(root_files, "list_folder", slow)
    todo = Todo(root, {}, 2, lambda t: None)
    with ThreadPoolExecutor(1) as pool:
        with todo.walking(pool):
            assert [c.rel for c in await todo.next()] == sorted(NAMES)[:2]
        held.set()
    # The pool's shutdown waited for the walk, which stopped at the first file after the stop: none further.
    assert 2 <= todo.files <= sum(rel.startswith("inbox/") for rel in NAMES)


async def test_a_file_refused_unreadable_is_sent_again_though_its_size_and_time_are_as_the_ledger_says(
    root: Path,
) -> None:
    # Its mode fixed since (a chmod leaves both as they were): its refusal hides its stored text from every
    # briefing, so a backfill reads it again (refused once more only if it still cannot be read).
    path = root / "inbox/a/x.md"
    known = {"inbox/a/x.md": (path.stat().st_size, path.stat().st_mtime, "refused-unreadable")}
    todo = Todo(root, known, 100, lambda t: None)
    with ThreadPoolExecutor(1) as pool:
        [chunk] = await _chunks(todo, pool)
    assert "inbox/a/x.md" in chunk and todo.skipped == 0
