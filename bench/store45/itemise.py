"""The window agent's store of a batch itemised in process: `_decode_all`, then `Pipeline.store_batch`'s
`apply_batch` and its report, per DuckDB statement and table, over build.py's batches into a fresh state.

Each DuckDB call is timed through a proxy on the store's connection (thread CPU of the caller, and process CPU:
DuckDB's own threads too); a commit is marked as checkpointing when it leaves the WAL empty. `--profile` runs
cProfile by thread CPU over the store instead (its Python inflated by the profiler). µs a note.

    python -m bench.store45.itemise --batches /tmp/store45/batches-10000-400.pickle --rounds 3
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pickle
import pstats
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sinks.clock import SYSTEM_CLOCK
from sinks.metrics import Metrics
from sinks.offsets import Position
from sinks.state import StateStore
from streams.agents import _decode_all
from streams.services import state_limits
from streams.settings import Settings
from streams.store_report import StoredBatch, report

TOPIC = "bench-documents"
Tally = dict[str, list[int]]  # label → [thread ns, process ns, calls]


def _label(sql: str) -> str:
    s = " ".join(sql.split())
    for pattern in (
        r"^(INSERT INTO \w+)",
        r"^(UPDATE \w+ SET \w+)",
        r"nextval\('(\w+)'\)",
        r"^(DELETE FROM \w+)",
    ):
        m = re.search(pattern, s)
        if m:
            return m.group(1)
    return s[:40]


class Clock:
    def __init__(self) -> None:
        self.tally: Tally = defaultdict(lambda: [0, 0, 0])

    @contextmanager
    def on(self, label: str) -> Iterator[None]:
        t, p = time.thread_time_ns(), time.process_time_ns()
        try:
            yield
        finally:
            row = self.tally[label]
            row[0] += time.thread_time_ns() - t
            row[1] += time.process_time_ns() - p
            row[2] += 1


class Rel:
    def __init__(self, rel: Any, clock: Clock) -> None:
        self._rel, self._clock = rel, clock

    def insert_into(self, table: str) -> None:
        with self._clock.on(f"insert {table}"):
            self._rel.insert_into(table)


class Timed:
    """The store's connection, each call timed."""

    def __init__(self, db: Any, clock: Clock, wal: Path) -> None:
        self._db, self._clock, self._wal = db, clock, wal
        self._last = ""

    def execute(self, sql: Any, params: Any = None) -> Timed:
        self._last = _label(sql if isinstance(sql, str) else sql.query)
        # An Arrow insert's rows, read by DuckDB's scan of the calling frame's variables: that frame is this one now.
        arrow_rows = sys._getframe(1).f_locals.get("arrow_rows")  # noqa: F841
        with self._clock.on(self._last):
            self._db.execute(sql, params)
        return self

    def fetchall(self) -> Any:
        with self._clock.on(f"{self._last} fetch"):
            return self._db.fetchall()

    def fetchone(self) -> Any:
        with self._clock.on(f"{self._last} fetch"):
            return self._db.fetchone()

    def from_arrow(self, rows: Any) -> Rel:
        with self._clock.on("from_arrow"):
            return Rel(self._db.from_arrow(rows), self._clock)

    def begin(self) -> None:
        with self._clock.on("begin"):
            self._db.begin()

    def commit(self) -> None:
        t, p = time.thread_time_ns(), time.process_time_ns()
        self._db.commit()
        t, p = time.thread_time_ns() - t, time.process_time_ns() - p
        # Past the threshold the commit checkpointed: the WAL is empty (or gone) after it.
        checkpointed = not self._wal.exists() or self._wal.stat().st_size == 0
        row = self._clock.tally["commit (checkpoints)" if checkpointed else "commit"]
        row[0] += t
        row[1] += p
        row[2] += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


# The store's Python steps and native calls, each timed inclusive of what it calls (`--parts`).
PARTS = (
    ("sinks.offsets", "AppliedOffsets", "claim"),
    ("sinks.documents", "Documents", "_held"),
    ("processors.versions", "BatchPlan", "apply"),
    ("sinks.documents", None, "_write_plan"),
    ("sinks.documents", None, "_write_versions"),
    ("sinks.documents", None, "_insert_contents"),
    ("sinks.documents", "Held", "after"),
    ("sinks.documents", "Documents", "_seqs"),
    ("sinks.source_rows", "SourceRows", "_insert"),
    ("sinks.source_rows", "SourceRows", "_insert_titles"),
    ("sinks.rejections", None, "write_refusals"),
    ("sinks.documents", None, "rest_of"),
    ("sinks.documents", None, "TextColumns"),
    ("sinks.documents", None, "TypedColumns"),
    ("sinks.source_rows", None, "TypedColumns"),
    ("sinks.source_rows.FactRows", None, "terms"),
    ("sinks.source_rows.FactRows", None, "signatures"),
)


def _wrap_parts(clock: Clock) -> None:
    import importlib

    for module, cls, name in PARTS:
        if module.endswith(".FactRows"):
            owner: Any = importlib.import_module(module.rsplit(".", 1)[0]).FactRows
        else:
            owner = importlib.import_module(module)
            owner = getattr(owner, cls) if cls else owner
        inner = getattr(owner, name)
        label = f"py {cls + '.' if cls else ''}{name}" + (
            " (source_rows)" if module == "sinks.source_rows" and not cls else ""
        )
        if module.endswith(".FactRows"):
            label = f"native FactRows.{name}"

        def timed(*args: Any, _inner: Any = inner, _label: str = label, **kw: Any) -> Any:
            with clock.on(_label):
                return _inner(*args, **kw)

        setattr(owner, name, staticmethod(timed) if module.endswith(".FactRows") else timed)


def _wire(state: StateStore, clock: Clock, wal: Path) -> None:
    timed: Any = Timed(state._db, clock, wal)
    state._db = timed
    for part in (state.offsets, state.docs, state.sources, state.emissions, state.counts):
        part._db = timed


def _items(batch: list[tuple[int, int, bytes]], decoded: list[Any]) -> list[tuple[Any, Position]]:
    items: list[tuple[Any, Position]] = []
    for (partition, offset, _), notes in zip(batch, decoded, strict=True):
        at = Position(TOPIC, partition, offset)
        items.extend((row, at.at_row(i)) for i, row in enumerate(notes.rows))
    return items


def one_round(
    batches: list[list[tuple[int, int, bytes]]],
    profile: cProfile.Profile | None,
    parts: bool = False,
    bare: bool = False,
) -> dict[str, Any]:
    """A fresh state; each batch decoded, then stored and reported as the store thread does."""
    work = Path(tempfile.mkdtemp(prefix="store45-"))
    settings = Settings(root=work, state_dir=work)
    metrics = Metrics()
    state = StateStore(settings.state_file, state_limits(settings), metrics)
    wal = settings.state_file.with_name(settings.state_file.name + ".wal")
    clock = Clock()
    if profile is None and not bare:
        _wire(state, clock, wal)
    if parts:
        _wrap_parts(clock)
    notes = decode_ns = store_ns = store_p = report_ns = 0
    try:
        for batch in batches:
            t = time.thread_time_ns()
            decoded = _decode_all([v for _, _, v in batch])
            decode_ns += time.thread_time_ns() - t
            items = _items(batch, decoded)
            notes += sum(n.count for n in decoded if not isinstance(n, ValueError))
            t, p = time.thread_time_ns(), time.process_time_ns()
            if profile is not None:
                profile.enable()
            changed = state.apply_batch(items)
            if profile is not None:
                profile.disable()
            store_ns += time.thread_time_ns() - t
            store_p += time.process_time_ns() - p
            t = time.thread_time_ns()
            report(StoredBatch(items, changed, 0.01, SYSTEM_CLOCK.now().timestamp(), False, True), metrics)
            report_ns += time.thread_time_ns() - t
    finally:
        state.close()
        shutil.rmtree(work)
    tally = {k: v for k, v in clock.tally.items()}
    per = 1e3 * notes
    return {
        "notes": notes,
        "batches": len(batches),
        "decode_us": round(decode_ns / per, 1),
        "apply_thread_us": round(store_ns / per, 1),
        "apply_process_us": round(store_p / per, 1),
        "report_us": round(report_ns / per, 1),
        "calls": {k: [round(v[0] / per, 2), round(v[1] / per, 2), v[2]] for k, v in sorted(tally.items())},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=Path, default=Path("/tmp/store45/batches-10000-400.pickle"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bare", action="store_true", help="no proxy: `apply_batch` timed whole")
    p.add_argument("--parts", action="store_true", help="also time the store's Python steps (once: wrapped)")
    p.add_argument("--profile", type=Path, default=None, help="write cProfile stats (thread CPU) here")
    a = p.parse_args()
    batches = pickle.loads(a.batches.read_bytes())
    for _ in range(a.rounds):
        prof = cProfile.Profile(time.thread_time) if a.profile else None
        got = one_round(batches, prof, a.parts and _ == 0, a.bare)
        got["load"] = os.getloadavg()[0]
        got["variant"] = os.environ.get("STORE45_VARIANT", "")
        print(json.dumps(got), flush=True)
        if prof is not None:
            prof.dump_stats(a.profile)
            pstats.Stats(str(a.profile)).sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main()
