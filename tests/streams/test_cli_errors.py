"""Wrong input to `predigest …`: one line naming the file, key, variable, path or port and what to do, exit 2.

Each case runs the real command as a subprocess, as an operator would, and checks it started nothing first (no
local broker: no bootstrap is configured, so starting one would log "starting the local broker").
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sinks.duck import DuckFile
from sinks.file_claim import FileClaim
from sinks.ledger import LEDGER, Ledger
from sinks.state import STATE, StateStore
from streams.worker_process import free_port
from tests.ledger_support import invalidated
from tests.streams.cli_support import predigest
from tests.support import holding

END = "2026-09-27T22:20:00+08:00"

# Each case starts the real command (a second or two of imports), up to five per parametrised test.
pytestmark = pytest.mark.timeout(120)


def refused(*args: str, env: dict[str, str] | None = None) -> str:
    """The command's only line on stderr, its exit 2 (a usage error): the error, without a traceback."""
    done = predigest(*args, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr
    assert "local broker" not in done.stderr  # nothing was started before the check
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_config_is_accepted_after_the_subcommand(tmp_path: Path) -> None:
    cfg = tmp_path / "my.toml"
    cfg.write_text(f"web_port = {free_port()}\n", encoding="utf-8")
    done = predigest("status", "--config", str(cfg))
    assert "unrecognized arguments" not in done.stderr
    assert done.returncode == 1  # no worker answered: the status command's own answer, not a usage error
    assert "did not answer" in done.stdout


@pytest.mark.parametrize(
    "command",
    [("status",), ("check",), ("explain", "inbox/x.md"), ("dead", "list"), ("flush", "--axis", "x")],
)
def test_a_missing_config_file_is_named(tmp_path: Path, command: tuple[str, ...]) -> None:
    line = refused(*command, "--config", str(tmp_path / "nope.toml"))
    assert f"config file {tmp_path / 'nope.toml'} does not exist" in line
    assert "examples/predigest.toml" in line


def test_a_folder_given_as_config_is_named(tmp_path: Path) -> None:
    line = refused("--config", str(tmp_path), "status")
    assert f"config file {tmp_path} is a directory" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_config_file_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "secret.toml"
    cfg.write_text("zone = 'UTC'\n", encoding="utf-8")
    cfg.chmod(0)
    line = refused("status", "--config", str(cfg))
    assert "cannot be read (Permission denied)" in line


def test_bad_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('zone = "UTC"\nroot = examples/root\n', encoding="utf-8")
    line = refused("status", "--config", str(cfg))
    assert f"{cfg} line 2, column 8" in line and "not valid TOML" in line


def test_an_unknown_key_is_named_with_the_closest_setting(tmp_path: Path) -> None:
    cfg = tmp_path / "typo.toml"
    cfg.write_text('zone = "UTC"\n\n[kafka]\nbootstrapp = "kafka:9092"\n', encoding="utf-8")
    line = refused("status", "--config", str(cfg))
    assert f"unknown key 'kafka.bootstrapp' in {cfg} line 4 (did you mean 'bootstrap'?)" in line


def test_an_unknown_key_of_an_axis_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "axes.toml"
    cfg.write_text('[[axes]]\nname = "kv"\nkeyword = ["KV cache"]\n', encoding="utf-8")
    line = refused("status", "--config", str(cfg))
    assert "unknown key 'axes[0].keyword'" in line and "did you mean 'keywords'?" in line


def test_an_unknown_variable_is_named_with_the_closest_one() -> None:
    line = refused("status", env={"PREDIGEST_KAFKA__BOOTSTRAPP": "kafka:9092"})
    assert "unknown variable PREDIGEST_KAFKA__BOOTSTRAPP (did you mean 'PREDIGEST_KAFKA__BOOTSTRAP'?)" in line


def test_a_bad_value_names_the_variable() -> None:
    line = refused("status", env={"PREDIGEST_WEB_PORT": "abc"})
    assert "web_port: Input should be a valid integer" in line and "PREDIGEST_WEB_PORT" in line


def test_a_bad_value_in_the_file_names_its_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad-value.toml"
    cfg.write_text('lang = "zh"\n\n[kafka]\npartitions = 0\n', encoding="utf-8")
    line = refused("status", "--config", str(cfg))
    assert f"kafka.partitions: Input should be greater than or equal to 1; fix it in {cfg} line 4" in line


def test_an_unknown_zone_is_named() -> None:
    line = refused("status", env={"PREDIGEST_ZONE": "Mars/Base"})
    assert "zone: 'Mars/Base' is no IANA time zone" in line and "PREDIGEST_ZONE" in line


@pytest.mark.parametrize(
    "args",
    [
        ("watch",),
        ("run", "--end", END),
        ("once", "--axis", "inference", "--end", END, "--out", "OUT"),
        ("backfill",),
    ],
)
def test_a_root_that_does_not_exist_is_refused_before_anything_starts(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    missing = tmp_path / "no-such-root"
    root = ["--root", str(missing)]
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    line = refused(*argv, *root, env={"PREDIGEST_KAFKA_CACHE": str(tmp_path / "no-kafka")})
    assert f"root {missing} does not exist" in line
    assert not (tmp_path / "out").exists()


def test_a_backfill_on_a_ledger_whose_watcher_waits_to_reopen_it_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    # The watcher's connection closed by a refusal that invalidated DuckDB's database, until its next write (1-60
    # s). Before: DuckDB's lock went with it, and the backfill started (here: to find no Kafka).
    state = tmp_path / "state"
    held = invalidated(state / "watcher-ledger.duckdb", time.monotonic, [("inbox/tom/x.md", 1, 1.0, "x")])
    env = {
        "PREDIGEST_STATE_DIR": str(state),
        "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}",
    }
    line = refused("backfill", "--root", "examples/root", env=env)
    assert (
        f"its lock file {state}/watcher-ledger.duckdb.lock is held by another process (PID {os.getpid()})"
        in line
    )
    assert line.endswith("One watcher or backfill at a time runs on a root: wait for its end, or stop it")
    held.close()


def test_a_second_watcher_with_no_kafka_is_refused_for_the_ledger_not_for_kafka(tmp_path: Path) -> None:
    # Before: `predigest watch` made its topics first, and with no broker said "Kafka cannot be reached", not that
    # another watcher holds its ledger (the operator looked for a broker fault while a watcher ran).
    state = tmp_path / "state"
    held = Ledger(state / "watcher-ledger.duckdb")
    env = {"PREDIGEST_STATE_DIR": str(state), "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}"}
    try:
        line = refused("watch", "--root", "examples/root", env=env)
    finally:
        held.close()
    assert f"watcher-ledger.duckdb.lock is held by another process (PID {os.getpid()})" in line, line
    assert "Kafka" not in line


# A backfill holding the ledger: what `predigest backfill` writes in its lock file beside its PID.
_BACKFILL = (
    "import sys; from pathlib import Path; from sinks import file_claim; from sinks.ledger import Ledger\n"
    "file_claim.name_holder('backfill'); held = Ledger(Path(sys.argv[1])); print('held', flush=True)\n"
    "sys.stdin.read(); held.close()\n"
)


def test_a_watcher_refused_by_a_backfill_names_the_backfill(tmp_path: Path) -> None:
    # Before: the refusal asked "Is another watcher running on this root?" whoever held the ledger.
    ledger = tmp_path / "state" / "watcher-ledger.duckdb"
    with holding(_BACKFILL, str(ledger)) as holder:
        env = {
            "PREDIGEST_STATE_DIR": str(ledger.parent),
            "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}",
        }
        line = refused("watch", "--root", "examples/root", env=env)
    assert line.endswith(
        f"its lock file {ledger}.lock is held by `predigest backfill` (PID {holder.pid}). One watcher or "
        "backfill at a time runs on a root: wait for its end, or stop it"
    ), line


def test_a_watcher_writes_its_command_beside_its_pid_in_the_ledger_s_lock(tmp_path: Path) -> None:
    # What a second watcher or backfill names (above): here the watch ends at once, finding no Kafka.
    state = tmp_path / "state"
    env = {"PREDIGEST_STATE_DIR": str(state), "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}"}
    done = predigest("watch", "--root", "examples/root", env=env)
    assert done.returncode == 2 and "Kafka" in done.stderr, done.stderr
    pid, command = (state / "watcher-ledger.duckdb.lock").read_text(encoding="utf-8").split()
    assert pid.isdigit() and int(pid) != os.getpid() and command == "watch"


@pytest.mark.parametrize(
    ("args", "held"),
    [
        (("backfill", "--root", "examples/root"), LEDGER),
        (("run", "--root", "examples/root", "--end", END), LEDGER),
        (("run", "--root", "examples/root", "--end", END), STATE),
        (("worker",), STATE),
        (("rebuild",), STATE),
    ],
)
def test_a_command_beside_a_holder_of_its_file_is_refused_for_it_before_a_broker_starts(
    tmp_path: Path, args: tuple[str, ...], held: DuckFile
) -> None:
    # Before: backfill, worker and rebuild started the local broker (here: failed to) and run made its topics too,
    # then were refused for the file (a worker's: after a broker start of ~10 s, left running).
    state = tmp_path / "state"
    path = state / ("watcher-ledger.duckdb" if held is LEDGER else "worker.duckdb")
    StateStore(path).close() if held is STATE else None  # a running worker's file is there: a check opens it
    cache = tmp_path / "kafka-cache"
    cache.write_text("", encoding="utf-8")  # no broker starts from it: the old order failed at once
    env = {
        "PREDIGEST_STATE_DIR": str(state),
        "PREDIGEST_KAFKA_CACHE": str(cache),
        "PREDIGEST_WEB_PORT": str(free_port()),
        "PREDIGEST_WATCHER_METRICS_PORT": str(free_port()),
    }
    claim = FileClaim(path, held)
    try:
        line = refused(*args, env=env)
    finally:
        claim.release()
    assert line.endswith(
        f"cannot open the {held.what} {path}: its lock file {path}.lock is held by another process (PID "
        f"{os.getpid()}). {held.if_locked}"
    ), line


def test_flush_of_an_unknown_axis_is_refused_before_the_broker_starts(tmp_path: Path) -> None:
    line = refused("flush", "--axis", "nope", env={"PREDIGEST_KAFKA_CACHE": str(tmp_path / "no-kafka")})
    assert "axis 'nope' is not configured (configured: inference, llm-infra, risk, llm-application)" in line
    assert not (tmp_path / "no-kafka").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("flush", "--axis", "inference"),
        ("worker",),
        ("watch", "--root", "examples/root"),
        ("backfill", "--root", "examples/root"),
        ("once", "--root", "examples/root", "--axis", "inference", "--end", END, "--out", "OUT"),
    ],
)
def test_an_unreachable_bootstrap_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    env = {"PREDIGEST_KAFKA__BOOTSTRAP": bootstrap, "PREDIGEST_STATE_DIR": str(tmp_path / "state")}
    line = refused(*(a.replace("OUT", str(tmp_path / "out")) for a in args), env=env)
    assert f"Kafka at {bootstrap} cannot be reached (Connection refused)" in line
    assert "PREDIGEST_KAFKA__BOOTSTRAP" in line


@pytest.fixture
def slow_to_refuse() -> Iterator[int]:
    """A port whose listener closes each connection half a second after it came, as a far broker's proxy may."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        stop = threading.Event()

        def serve() -> None:
            with contextlib.suppress(OSError):  # the socket closed at the end of the test
                while not stop.is_set():
                    conn, _ = s.accept()
                    threading.Timer(0.5, conn.close).start()

        threading.Thread(target=serve, daemon=True).start()
        yield int(s.getsockname()[1])
        stop.set()


def test_a_backfill_says_nothing_of_its_root_before_kafka_answered(
    tmp_path: Path, slow_to_refuse: int
) -> None:
    # Its first files are walked and read while Kafka is asked: what it refuses is said once Kafka answered.
    root = tmp_path / "root"
    (root / "inbox").mkdir(parents=True)
    (root / "inbox" / "a.md").write_text("# a\n")
    (root / "inbox" / "link.md").symlink_to("/etc/passwd")
    os.mkfifo(root / "inbox" / "pipe")
    bootstrap = f"127.0.0.1:{slow_to_refuse}"
    env = {"PREDIGEST_KAFKA__BOOTSTRAP": bootstrap, "PREDIGEST_STATE_DIR": str(tmp_path / "state")}
    line = refused("backfill", "--root", str(root), "--no-progress", env=env)
    assert f"Kafka at {bootstrap} cannot be reached" in line


def test_a_worker_whose_port_is_taken_says_which_in_one_line(taken_port: int) -> None:
    env = {"PREDIGEST_WEB_PORT": str(taken_port), "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}"}
    line = refused("worker", env=env)
    assert f"port {taken_port} on 127.0.0.1 for web_port is not available" in line
    assert "PREDIGEST_WEB_PORT" in line


@pytest.mark.parametrize("command", ["watch", "run"])
def test_a_watcher_whose_port_is_taken_does_not_start(taken_port: int, command: str) -> None:
    env = {
        "PREDIGEST_WATCHER_METRICS_PORT": str(taken_port),
        "PREDIGEST_WEB_PORT": str(free_port()),
        "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{free_port()}",
    }
    line = refused(command, env=env)
    assert f"port {taken_port} on 127.0.0.1 for watcher_metrics_port is not available" in line
