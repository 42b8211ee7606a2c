"""Fixtures: one local Kafka broker for the whole session, fresh topics and groups per test; a test timeout that
lands in a DuckDB query reported as a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from _pytest._code.code import ExceptionRepr
from hypothesis import settings

from streams.kafka_local import start_broker, stop_broker
from streams.settings import KafkaSettings, Settings
from streams.worker_process import free_port

PROJECT = Path(__file__).resolve().parents[1]
KAFKA_CACHE = PROJECT / ".cache" / "kafka"

# Hypothesis fails an example slower than 200 ms by default: a wall-clock bound that a loaded shared machine
# trips. Speed is measured in the benchmarks; property tests check properties (pytest-timeout guards hangs).
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


_STARTED = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = time.monotonic()  # pytest-timeout's timer runs from the set-up on


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test timeout that lands in a DuckDB query is reported as the timeout it is: DuckDB turns the exception of
    pytest-timeout's SIGALRM handler into "RuntimeError: Query interrupted", read as the state interrupting a read."""
    report = yield
    said, timeout = report.longrepr, _timed_out(item, call)
    if timeout is not None and isinstance(said, ExceptionRepr) and said.reprcrash is not None:
        what = f"Timeout (>{timeout}s) from pytest-timeout, not the state"
        said.addsection(
            what, "its SIGALRM landed in a DuckDB query, which DuckDB reports as 'Query interrupted'"
        )
        said.reprcrash.message = f"{what}: a DuckDB query ran past it"
    return report


def _timed_out(item: pytest.Item, call: pytest.CallInfo[None]) -> float | None:
    """The test's timeout if DuckDB's "Query interrupted" came at it (not a Ctrl-C before)."""
    failed, marker = call.excinfo, item.get_closest_marker("timeout")
    if failed is None or not failed.errisinstance(RuntimeError) or str(failed.value) != "Query interrupted":
        return None
    # pytest-timeout's order: the marker, then `--timeout` on the command line, then the ini.
    given = item.config.getoption("timeout", None) or item.config.getini("timeout")
    timeout = float(marker.args[0] if marker and marker.args else given or 0)
    ran = call.stop - item.stash.get(_STARTED, call.start)
    return timeout if 0 < timeout <= ran + 0.5 else None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files from the output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def kafka_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kafka-broker")


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_data_dir: Path) -> Iterator[str]:
    """The session's real broker (KRaft, 127.0.0.1), started by the project's own script."""
    bootstrap = start_broker(KAFKA_CACHE, kafka_data_dir)
    yield bootstrap
    stop_broker(KAFKA_CACHE, kafka_data_dir)


@pytest.fixture
def make_settings(kafka_bootstrap: str, tmp_path: Path) -> Callable[..., Settings]:
    """Settings on the session broker with topic and group names no other test uses."""

    def make(**overrides: Any) -> Settings:
        run = uuid4().hex[:10]
        root = overrides.pop("root", tmp_path / "root")
        for top in ("inbox", "paper_cards", "work-queue", "living"):
            (root / top).mkdir(parents=True, exist_ok=True)
        kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=f"t{run}")
        values: dict[str, Any] = {
            "root": root,
            "state_dir": tmp_path / "state",
            "out_dir": tmp_path / "out",
            "app_id": f"t{run}",
            "kafka": kafka,
            "web_port": free_port(),
            "watcher_metrics_port": free_port(),
            "close_enabled": False,
            "quiet_seconds": 0.3,
            "rescan_seconds": 5.0,
            "kafka_cache": KAFKA_CACHE,
            # The tests brief windows of September 2026 (examples/root, fixed END constants) whatever today is.
            "flush_max_past_days": 36_600,
        }
        values.update(overrides)
        return Settings(**values)

    return make
