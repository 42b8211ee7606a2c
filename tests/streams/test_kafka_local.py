"""The local broker's script (`deploy/kafka/kafka.sh`) through `streams.kafka_local`: a stop bounded and said, a
pid file trusted only while it names this broker (never a pid reused by another program), a start or status that
finds the running broker and starts nothing, a Ctrl-C during `predigest kafka stop` said in one line."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streams.errors import BrokerUnavailableError
from streams.kafka_local import start_broker, stop_broker
from tests.conftest import KAFKA_CACHE
from tests.streams.broker_support import ctrl_c_once_it_stops, stand_in_broker

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "kafka.sh"


def kafka_sh(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PREDIGEST_KAFKA_CACHE": str(cache), **env}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=full, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_broker_that_ignores_sigterm_is_killed_at_the_end_of_its_stop_and_that_is_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "run"
    with stand_in_broker(data, "signal.signal(signal.SIGTERM, signal.SIG_IGN)") as broker:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING):
            assert stop_broker(tmp_path, data, stop_seconds=1)  # killed: stopped
        took = time.monotonic() - started
        assert broker.wait(timeout=5) == -signal.SIGKILL
    assert 1 <= took < 5
    assert not (data / "kafka.pid").exists()
    assert f"the broker (pid {broker.pid}) was still running 1 s after SIGTERM: killed" in caplog.text
    assert os.path.basename(str(data)) in caplog.text


def test_a_broker_that_exited_but_was_never_reaped_is_stopped_at_once_not_killed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # In a container whose PID 1 does not reap, the broker stays a zombie: `kill -0` took it for running, the stop
    # waited its whole bound and then said it had killed it.
    data = tmp_path / "run"
    with stand_in_broker(data):
        started = time.monotonic()
        with caplog.at_level(logging.WARNING):
            # Not reaped meanwhile (nobody waits for it): a zombie once SIGTERM ends it.
            assert stop_broker(tmp_path, data, stop_seconds=10)
        took = time.monotonic() - started
    assert took < 5
    assert "still running" not in caplog.text
    assert not (data / "kafka.pid").exists()


def test_a_stop_bound_that_is_not_whole_seconds_is_said_and_30_s_used(tmp_path: Path) -> None:
    # Under `set -u`, `$((seconds * 2))` took `abc` for an unset variable (the script died after SIGTERM, its pid
    # file left) and `1.5` for a syntax error (no wait at all: SIGKILL at once).
    slow = "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1), sys.exit(0)))"
    for bound in ("1.5", "abc"):
        data = tmp_path / bound
        with stand_in_broker(data, slow) as broker:
            done = kafka_sh("stop", str(data), cache=tmp_path, PREDIGEST_KAFKA_STOP_SECONDS=bound)
            assert broker.wait(timeout=5) == 0, (bound, done.stderr)
        assert done.returncode == 0 and not (data / "kafka.pid").exists(), (bound, done.stderr)
        assert (
            done.stderr == f"kafka.sh: PREDIGEST_KAFKA_STOP_SECONDS={bound} is not whole seconds: 30 s used\n"
        )


def test_a_pid_reused_by_another_program_is_not_signalled_and_its_stale_file_is_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The broker's stop was cut short (a second Ctrl-C reaches kafka.sh too), the broker exited later, its pid
    # went to another program: the next stop sent that program SIGTERM, then SIGKILL.
    data = tmp_path / "run"
    data.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (data / "kafka.pid").write_text(f"{other.pid}\n")
        assert kafka_sh("status", str(data), cache=tmp_path).returncode == 1
        with caplog.at_level(logging.WARNING):
            assert stop_broker(tmp_path, data, stop_seconds=1)
        time.sleep(0.5)
        assert other.poll() is None  # never signalled
    finally:
        other.kill()
        other.wait()
    assert not (data / "kafka.pid").exists()
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"kafka.sh: kafka.pid named pid {other.pid}, which is not the broker of {data.resolve()} "
        "(that broker exited): the stale file is removed"
    ]


def test_a_start_while_the_broker_is_still_stopping_refuses_and_keeps_its_storage(tmp_path: Path) -> None:
    # A broker still stopping holds its ports: a second one found them taken and formatted fresh storage under
    # the first, its topics gone.
    data = tmp_path / "run"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "meta.properties").write_text("kept\n")
    with stand_in_broker(data, "signal.signal(signal.SIGTERM, signal.SIG_IGN)") as broker:
        # No start or stop of it in progress: a stop cut short (it goes on stopping), or a broker hung.
        with pytest.raises(
            BrokerUnavailableError,
            match=re.escape(
                "runs but does not answer, and no start or stop of it is in progress (a stop cut"
            ),
        ):
            start_broker(KAFKA_CACHE, data)
        assert broker.poll() is None
        assert (data / "kafka.pid").read_text() == f"{broker.pid}\n"
    assert (data / "logs" / "meta.properties").read_text() == "kept\n"


@pytest.mark.integration
def test_status_and_start_find_the_running_broker_and_start_nothing(
    kafka_bootstrap: str, kafka_data_dir: Path
) -> None:
    pid = (kafka_data_dir / "kafka.pid").read_text()
    status = kafka_sh("status", str(kafka_data_dir), cache=KAFKA_CACHE)
    assert (status.returncode, status.stdout.strip()) == (0, kafka_bootstrap)
    assert start_broker(KAFKA_CACHE, kafka_data_dir) == kafka_bootstrap
    assert (kafka_data_dir / "kafka.pid").read_text() == pid


@pytest.mark.timeout(60)
def test_a_ctrl_c_during_kafka_stop_says_the_broker_may_still_be_stopping(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    stays = "signal.signal(signal.SIGTERM, lambda *a: print('term', flush=True))"  # and goes on stopping
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PREDIGEST_KAFKA_CACHE": str(cache)}
    with stand_in_broker(cache / "run", stays) as broker:
        argv = [sys.executable, "-m", "streams.cli", "kafka", "stop"]
        code, said = ctrl_c_once_it_stops(broker, argv, SCRIPT.parents[2], env)
        assert broker.poll() is None
    assert code == 128 + signal.SIGINT and "Traceback" not in said, said
    assert said.strip().endswith(
        "interrupted by SIGINT: the local Kafka broker may still be stopping; `predigest kafka stop` ends it"
    ), said
    assert (cache / "run" / "kafka.pid").exists()  # what the next `predigest kafka stop` stops


@pytest.mark.timeout(120)
def test_a_sigterm_during_kafka_stop_leaves_kafka_sh_to_end_the_broker_and_says_so(tmp_path: Path) -> None:
    # The SIGTERM's TerminatedError made subprocess.run kill kafka.sh mid-stop: a broker that ignores SIGTERM was
    # never killed, and the line said "what it started is stopped".
    cache = tmp_path / "cache"
    stays = "signal.signal(signal.SIGTERM, lambda *a: print('term', flush=True))"  # and goes on running
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PREDIGEST_KAFKA_CACHE": str(cache)}
    argv = [sys.executable, "-m", "streams.cli", "kafka", "stop"]
    with stand_in_broker(cache / "run", stays) as broker:
        with subprocess.Popen(
            argv, cwd=SCRIPT.parents[2], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            assert broker.stdout is not None and broker.stdout.readline().strip() == "term"
            proc.send_signal(signal.SIGTERM)
            code, said = proc.wait(timeout=30), proc.stdout.read() if proc.stdout else ""
        # Killed at the stop's bound (30 s), as without the SIGTERM.
        assert broker.wait(timeout=60) == -signal.SIGKILL
    assert code == 128 + signal.SIGTERM and "Traceback" not in said, said
    assert said.strip().endswith(
        "interrupted by SIGTERM: kafka.sh goes on stopping the local Kafka broker (SIGKILL 30 s after its "
        "SIGTERM, its data kept)"
    ), said


def test_a_broker_started_through_a_symlink_of_its_data_dir_is_still_stopped(tmp_path: Path) -> None:
    # kafka.sh before b49d33c started the broker with the logical path (a worktree's .cache/kafka symlink): its
    # next stop took that running broker for a stale pid, removed its file and never stopped it.
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    link.symlink_to(real)
    (real / "server.properties").write_text("")
    script = "print('up', flush=True); import time; time.sleep(60)"
    argv = [sys.executable, "-c", script, "kafka.Kafka", f"{link}/server.properties"]
    broker = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None and broker.stdout.readline().strip() == "up"
        (real / "kafka.pid").write_text(f"{broker.pid}\n")
        stop = kafka_sh("stop", str(link), cache=tmp_path, PREDIGEST_KAFKA_STOP_SECONDS="5")
        assert (stop.returncode, stop.stderr) == (0, "")
        assert broker.wait(timeout=5) == -signal.SIGTERM
    finally:
        broker.kill()
        broker.communicate()
    assert not (real / "kafka.pid").exists()
