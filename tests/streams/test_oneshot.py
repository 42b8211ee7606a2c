"""`predigest run`'s stop: a second Ctrl-C kills the worker at once and names the broker the run started, left
running; the hard exit a first signal arms bounds the watcher's and the worker's stop, not the broker's, whose
stop has its own bound (`test_kafka_local.py`); a Ctrl-C that cuts that stop short exits 128 + it."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.oneshot import _kill_and_name_broker
from streams.settings import KafkaSettings, Settings
from streams.worker_process import dump_settings
from tests.streams.broker_support import ctrl_c_once_it_stops, stand_in_broker

PROJECT = Path(__file__).resolve().parents[2]


def test_a_second_ctrl_c_kills_the_worker_and_names_the_broker_left_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with caplog.at_level(logging.WARNING):
        _kill_and_name_broker(worker)()
    assert worker.wait(timeout=5) != 0
    assert "`predigest kafka stop` stops it" in caplog.text


# `predigest run` on a root whose local broker it started: its watcher and worker (stood in for) stop at once,
# with a hard exit of 1 s; the broker's stop then takes 3 s.
SLOW_BROKER_STOP = """
import asyncio, sys, time
from pathlib import Path
from datetime import datetime
from zoneinfo import ZoneInfo
from sinks.clock import SYSTEM_CLOCK
from streams import commands, kafka_local, logs, oneshot
from streams.stopping import install_stop
from streams.worker_process import load_dumped_settings

async def run(settings, request, ledger, stopping):
    ledger.close()
    stop = asyncio.Event()
    install_stop(stop, 1.0, again_exits=True, state=stopping)
    print("running", flush=True)
    await stop.wait()

def stop_broker(settings):
    print("broker stopping", flush=True)
    time.sleep(3)
    print("broker stopped", flush=True)
    return True

logs.configure(log_json=False, level="INFO")
oneshot.run = run
kafka_local.local_broker_running = lambda settings: False
kafka_local.resolve_bootstrap = lambda settings: settings
kafka_local.stop_local_broker = stop_broker
end = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))
request = commands.RunRequest(end, archive=True, exit_after=False)
sys.exit(commands.run(load_dumped_settings(Path(sys.argv[1])), request, SYSTEM_CLOCK))
"""


def _run_with_a_slow_broker_stop(settings: Settings, tmp_path: Path) -> subprocess.Popen[str]:
    local = settings.model_copy(update={"kafka": KafkaSettings(bootstrap=None)})
    cfg = dump_settings(local, tmp_path / "run-settings.json")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_BROKER_STOP, str(cfg)],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while line and "running" not in line:
        line = proc.stdout.readline()
    return proc


def test_runs_hard_exit_does_not_cut_the_broker_stop_it_started(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    with _run_with_a_slow_broker_stop(make_settings(), tmp_path) as proc:
        try:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=20)
        finally:
            proc.kill()
        output = proc.stdout.read() if proc.stdout else ""
    assert code == 0, output[-3000:]
    assert "broker stopped" in output and "exiting now" not in output, output[-3000:]
    assert "stopping the local Kafka broker this run started (up to 30 s;" in output


def test_a_second_ctrl_c_during_the_broker_stop_exits_at_once_and_says_so(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    with _run_with_a_slow_broker_stop(make_settings(), tmp_path) as proc:
        try:
            proc.send_signal(signal.SIGINT)
            assert proc.stdout is not None
            line = proc.stdout.readline()
            while line and "broker stopping" not in line:
                line = proc.stdout.readline()
            again_at = time.monotonic()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=20)
            took = time.monotonic() - again_at
        finally:
            proc.kill()
        output = proc.stdout.read() if proc.stdout else ""
    # Its exit before the broker's 3 s stop ended is the absent "broker stopped"; the bound only catches a hang.
    assert code == 128 + signal.SIGINT and took < 10, (took, output)
    assert "SIGINT again: exiting now" in output and "broker stopped" not in output
    assert "may still be stopping: `predigest kafka stop` ends its stop" in output


# `predigest run --exit` (or a run whose end no signal asked for): its briefings written, it stops the local broker
# it started with the real script, and a first Ctrl-C reaches both while that broker is still stopping.
RUN_ENDED_BY_ITSELF = """
import asyncio, sys
from pathlib import Path
from datetime import datetime
from zoneinfo import ZoneInfo
from sinks.clock import SYSTEM_CLOCK
from streams import commands, kafka_local, logs, oneshot
from streams.stopping import install_stop
from streams.worker_process import load_dumped_settings

async def run(settings, request, ledger, stopping):
    ledger.close()
    install_stop(asyncio.Event(), 1.0, again_exits=True, state=stopping)

logs.configure(log_json=False, level="INFO")
oneshot.run = run
kafka_local.local_broker_running = lambda settings: False
kafka_local.resolve_bootstrap = lambda settings: settings
end = datetime(2026, 9, 27, 22, 20, tzinfo=ZoneInfo("Asia/Shanghai"))
request = commands.RunRequest(end, archive=True, exit_after=True)
sys.exit(commands.run(load_dumped_settings(Path(sys.argv[1])), request, SYSTEM_CLOCK))
"""


@pytest.mark.timeout(60)
def test_a_ctrl_c_that_cuts_the_broker_stop_of_run_short_exits_128_plus_it(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    stopping = "signal.signal(signal.SIGTERM, lambda *a: print('term', flush=True))"  # and goes on running
    with stand_in_broker(cache / "run", stopping) as broker:
        local = make_settings().model_copy(
            update={"kafka": KafkaSettings(bootstrap=None), "kafka_cache": cache}
        )
        cfg = dump_settings(local, tmp_path / "run-settings.json")
        code, output = ctrl_c_once_it_stops(
            broker, [sys.executable, "-c", RUN_ENDED_BY_ITSELF, str(cfg)], PROJECT
        )
        assert broker.poll() is None  # still stopping, as the real one would be
    assert code == 128 + signal.SIGINT, output[-3000:]
    assert "stop ended early" in output and "`predigest kafka stop` ends it" in output, output[-3000:]
    assert (cache / "run" / "kafka.pid").exists()  # what `predigest kafka stop` needs to end that stop


def test_a_timer_firing_as_it_is_disarmed_exits_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The timer thread past its cancel check when `run`'s finally disarms it: the broker's stop has begun, with
    # `before_exit` changed under it; the hard exit it bounded is over and must not cut that stop.
    from streams import stopping as stopping_module

    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    state = stopping_module.Stopping(before_exit=lambda: exits.append(-1))
    stopping_module._hard_exit_timer(60, state)(signal.SIGINT)
    timer = state.timer
    assert timer is not None
    state.disarm()
    timer.function(*timer.args)
    assert exits == []


def test_kafka_stop_exits_1_when_the_broker_s_stop_did_not_finish(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from streams import commands, kafka_local

    def hung(cache: Path, data_dir: Path, stop_seconds: int) -> None:
        raise subprocess.TimeoutExpired(["kafka.sh", "stop"], stop_seconds + 30)

    monkeypatch.setattr(kafka_local, "_stop_script", hung)
    # A script or a shell then knows the broker may still be stopping (it exited 0 with an ERROR line).
    assert commands.kafka(make_settings(), "stop") == 1
    assert "did not stop within" in caplog.text
