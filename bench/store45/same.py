"""Every table of a state after build.py's batches, hashed in order: main's store and a variant's must print one digest.

    STORE45_VARIANT=1 python -m bench.store45.same --batches /tmp/store45/batches-10000-400.pickle

`--keep DIR` keeps the state there (worker.duckdb), for compression.py.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import shutil
import tempfile
from pathlib import Path

import duckdb

from bench.store45.itemise import _items
from sinks.state import StateStore
from streams.agents import _decode_all
from streams.services import state_limits
from streams.settings import Settings

TABLES = (
    "documents",
    "contents",
    "source_rows",
    "source_terms",
    "source_signatures",
    "source_titles",
    "applied",
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=Path, default=Path("/tmp/store45/batches-10000-400.pickle"))
    p.add_argument("--keep", type=Path, default=None)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="store45-same-"))
    try:
        settings = Settings(root=work, state_dir=work)
        state = StateStore(settings.state_file, state_limits(settings))
        for batch in pickle.loads(a.batches.read_bytes()):
            state.apply_batch(_items(batch, _decode_all([v for _, _, v in batch])))
        state.close()
        whole = hashlib.sha256()
        with duckdb.connect(str(settings.state_file), read_only=True) as db:
            for table in TABLES:
                rows = db.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
                digest = hashlib.sha256(repr(rows).encode()).hexdigest()[:16]
                whole.update(digest.encode())
                print(f"{table}: {len(rows)} rows, {digest}")
        print(f"all: {whole.hexdigest()[:16]}")
    finally:
        if a.keep is not None:
            shutil.rmtree(a.keep, ignore_errors=True)
            shutil.move(work, a.keep)
        else:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
