"""The arXiv cache on a real DuckDB file: batch writes, reopening, the negative cache's TTL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from processors.arxiv_atom import ArxivRecord
from sinks import duck
from sinks.arxiv_cache import CACHE, ArxivCache
from sinks.errors import StateLockedError, StateMemoryError
from tests.clocks import ManualClock

T0 = datetime(2026, 9, 27, 14, 20, tzinfo=UTC)


def rec(arxiv_id: str, title: str = "A title", version: int = 1) -> ArxivRecord:
    return ArxivRecord(
        id=arxiv_id,
        version=version,
        title=title,
        published="2026-09-01",
        primary_category="cs.LG",
        categories=("cs.LG", "cs.CL"),
        authors=("A. Author", "B. Author"),
    )


def test_records_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state" / "arxiv-cache.duckdb"
    cache = ArxivCache(path)
    cache.put_many([rec("2609.23130", "Mooncake"), rec("hep-th/9901001", "Old style")])
    cache.close()
    again = ArxivCache(path)
    got = again.get_many(["2609.23130", "hep-th/9901001", "2609.00001"])
    assert got == {
        "2609.23130": rec("2609.23130", "Mooncake"),
        "hep-th/9901001": rec("hep-th/9901001", "Old style"),
    }
    assert again.get_many([]) == {}


def test_a_newer_record_replaces_the_older(tmp_path: Path) -> None:
    cache = ArxivCache(tmp_path / "c.duckdb")
    cache.put_many([rec("2609.23130", "v1 title")])
    cache.put_many([rec("2609.23130", "v2 title", version=2), rec("2609.23130", "v2 title", version=2)])
    assert cache.get_many(["2609.23130"])["2609.23130"].version == 2


def test_many_ids_in_one_batch(tmp_path: Path) -> None:
    cache = ArxivCache(tmp_path / "c.duckdb")
    ids = [f"2609.{n:05d}" for n in range(1, 501)]
    cache.put_many(rec(i) for i in ids)
    assert set(cache.get_many(ids)) == set(ids)


def test_negative_cache_expires_after_its_ttl(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    cache = ArxivCache(tmp_path / "c.duckdb", negative_ttl=timedelta(hours=24), clock=clock)
    cache.put_missing(["2609.99999", "2609.99998"])
    assert cache.known_missing(["2609.99999", "2609.23130"]) == {"2609.99999"}
    clock.set(T0 + timedelta(hours=23))
    assert cache.known_missing(["2609.99999"]) == {"2609.99999"}
    clock.set(T0 + timedelta(hours=25))
    assert cache.known_missing(["2609.99999"]) == set()  # asked again after a day


def test_a_found_record_leaves_the_negative_cache(tmp_path: Path) -> None:
    cache = ArxivCache(tmp_path / "c.duckdb")
    cache.put_missing(["2609.99999"])
    cache.put_many([rec("2609.99999")])
    assert cache.known_missing(["2609.99999"]) == set()


def test_a_second_process_cannot_open_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "c.duckdb"
    script = f"import duckdb,time; c=duckdb.connect({str(path)!r}); print('ok', flush=True); time.sleep(30)"
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"ok"
            with pytest.raises(StateLockedError, match="arXiv cache"):
                ArxivCache(path)
        finally:
            holder.kill()


def test_a_cache_out_of_memory_names_its_own_setting(tmp_path: Path) -> None:
    # The state's advice (duckdb.memory_limit_mib) would not help: the cache has a limit of its own.
    exc = duck.error(
        duckdb.OutOfMemoryException("could not allocate"), tmp_path / "arxiv-cache.duckdb", CACHE
    )
    assert isinstance(exc, StateMemoryError)
    assert "raise arxiv.cache_memory_limit_mib" in str(exc) and "duckdb.memory_limit_mib" not in str(exc)


class _InsertRunsOut:
    """The cache's connection, its next `executemany` running out of memory (a batch past the cache's limit)."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self._db = db
        self.failed = False

    def executemany(self, query: str, parameters: object) -> object:
        if not self.failed:
            self.failed = True
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 16.0 MiB")
        return self._db.executemany(query, parameters)

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)


def test_a_batch_that_fails_leaves_no_transaction_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The enricher logs a put_many's duckdb.Error and the briefing goes on (a command out of memory now keeps the
    # worker up too): a BEGIN left open made every later batch fail ("cannot start a transaction within a
    # transaction") and its rows never commit, the cache written no more until a restart.
    cache = ArxivCache(tmp_path / "c.duckdb")
    monkeypatch.setattr(cache, "_db", _InsertRunsOut(cache._db))
    with pytest.raises(duckdb.OutOfMemoryException):
        cache.put_many([rec("2609.23130", "lost")])
    cache.put_many([rec("2609.23131", "kept")])
    cache.close()
    assert set(ArxivCache(tmp_path / "c.duckdb").get_many(["2609.23130", "2609.23131"])) == {"2609.23131"}
