"""The embedded default: start the project's local KRaft broker when no bootstrap is configured."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from pathlib import Path
from subprocess import PIPE

from streams.errors import BrokerUnavailableError, StoppedBySignalError, TerminatedError
from streams.settings import Settings

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "kafka" / "kafka.sh"
# The broker's stop: SIGTERM, then SIGKILL this long after it (kafka.sh stop; its data stays either way).
BROKER_STOP_SECONDS = 30


def _env(cache: Path, stop_seconds: int = BROKER_STOP_SECONDS) -> dict[str, str]:
    return {
        "PREDIGEST_KAFKA_CACHE": str(cache.resolve()),
        "PREDIGEST_KAFKA_STOP_SECONDS": str(stop_seconds),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }


def _run(
    args: list[str], cache: Path, timeout: float, stop_seconds: int = BROKER_STOP_SECONDS
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=_env(cache, stop_seconds),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_broker(cache: Path, data_dir: Path) -> str:
    """Start (or find running) the local broker keeping its data in `data_dir`; returns its bootstrap. SIGINT or
    SIGTERM meanwhile is passed on to the script, which stops a broker it launched (StoppedBySignalError)."""
    # Its own session: the signal is passed on to the script's whole group (a `sleep`, a `flock` it waits for),
    # so that its trap runs at once; the broker it launches has a session of its own either way.
    # Not `with`: its exit would wait for a script still stopping the broker after a second signal.
    script = subprocess.Popen(
        ["bash", str(SCRIPT), "start", str(data_dir.resolve())],
        env=_env(cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = script.communicate(timeout=900)
    except (KeyboardInterrupt, TerminatedError) as exc:
        raise _interrupted_start(script, exc) from None
    except subprocess.TimeoutExpired:
        os.killpg(script.pid, signal.SIGTERM)
        out, err = script.communicate()
    bootstrap = out.strip().splitlines()[-1] if out.strip() else ""
    if script.returncode != 0 or not bootstrap:
        raise BrokerUnavailableError(
            f"could not start the local Kafka broker ({SCRIPT} start exited {script.returncode}): "
            f"{err.strip()[-2000:]}. Set PREDIGEST_KAFKA__BOOTSTRAP to use an existing broker."
        )
    return bootstrap


def _interrupted_start(script: subprocess.Popen[str], exc: BaseException) -> StoppedBySignalError:
    """Pass the signal on to the start's script and wait for it (it stops a broker it launched): the one line
    that says whether a broker was launched, and whether it is stopped or runs."""
    signum = signal.SIGTERM if isinstance(exc, TerminatedError) else signal.SIGINT
    with contextlib.suppress(ProcessLookupError):
        os.killpg(script.pid, signum)
    try:
        out, err = script.communicate(timeout=BROKER_STOP_SECONDS + 30)
    except (
        KeyboardInterrupt,
        TerminatedError,
        subprocess.TimeoutExpired,
    ):  # a second signal: no more waiting
        return StoppedBySignalError(signum, _LEFT_STOPPING)
    for line in err.splitlines():
        if "was still running" in line:  # its stop's bound passed: killed
            log.warning("%s", line)
    said = [line.split(_STOPPED_LINE, 1)[1] for line in err.splitlines() if _STOPPED_LINE in line]
    if said:
        return StoppedBySignalError(signum, f"{_DURING}: {said[-1]}")
    if out.strip():  # its bootstrap out, the script's exit 0 or its trap's (a signal right after)
        return StoppedBySignalError(signum, _ANSWERED.format(out.strip().splitlines()[-1]))
    return StoppedBySignalError(signum, f"{_DURING}: none was launched")


_STOPPED_LINE = "interrupted during the start: "
_DURING = " during the local Kafka broker's start"
_LEFT_STOPPING = f"{_DURING}: the broker it launched may still be stopping; `predigest kafka stop` ends it"
_ANSWERED = (
    ": the local Kafka broker at {} answered first and keeps running (`predigest kafka stop` stops it)"
)


def stop_broker(cache: Path, data_dir: Path, stop_seconds: int = BROKER_STOP_SECONDS) -> bool:
    """Stop the local broker of `data_dir` (SIGTERM, then SIGKILL after `stop_seconds`, said in a WARNING); its
    data stays. False when the stop did not finish (said in a line): it may still be stopping."""
    try:
        result = _stop_script(cache, data_dir, stop_seconds)
    except subprocess.TimeoutExpired:
        log.error(
            "the local Kafka broker of %s did not stop within %d s: `predigest kafka stop` tries again",
            data_dir,
            stop_seconds + 30,
        )
        return False
    for line in result.stderr.strip().splitlines():
        log.warning("%s", line)
    # Interrupted (a Ctrl-C reaches the script too): the broker may still be stopping.
    if result.returncode != 0:
        log.warning(
            "the local Kafka broker's stop ended early (%s stop exited %d): `predigest kafka stop` ends it",
            SCRIPT,
            result.returncode,
        )
    return result.returncode == 0


def _stop_script(cache: Path, data_dir: Path, stop_seconds: int) -> subprocess.CompletedProcess[str]:
    """`kafka.sh stop`, killed at its timeout only: a signal here (SIGTERM to this process alone; a Ctrl-C reaches
    the script too) leaves it to end the broker's stop, SIGKILL at its bound included (subprocess.run killed it)."""
    args = ["bash", str(SCRIPT), "stop", str(data_dir.resolve())]
    script = subprocess.Popen(args, env=_env(cache, stop_seconds), stdout=PIPE, stderr=PIPE, text=True)
    try:
        out, err = script.communicate(timeout=stop_seconds + 30)
    except subprocess.TimeoutExpired:
        script.kill()
        script.communicate()
        raise
    return subprocess.CompletedProcess(args, script.returncode, out, err)


def ensure_local_broker(settings: Settings) -> str:
    """Return the bootstrap of the embedded broker, starting it (and fetching Kafka) if needed."""
    if local_broker_running(settings):
        # `start` finds the running one and starts nothing.
        bootstrap = start_broker(settings.kafka_cache, settings.kafka_cache / "run")
        log.info("no Kafka bootstrap configured: using the local broker at %s", bootstrap)
        return bootstrap
    log.info("no Kafka bootstrap configured: starting the local broker (cache %s)", settings.kafka_cache)
    bootstrap = start_broker(settings.kafka_cache, settings.kafka_cache / "run")
    log.info("local Kafka broker started at %s (`predigest kafka stop` stops it)", bootstrap)
    return bootstrap


def local_broker_running(settings: Settings) -> bool:
    """Whether the local broker of `kafka_cache` runs and answers now (nothing is started)."""
    return _run(["status", str(settings.kafka_cache / "run")], settings.kafka_cache, 30).returncode == 0


def stop_local_broker(settings: Settings) -> bool:
    return stop_broker(settings.kafka_cache, settings.kafka_cache / "run")


def resolve_bootstrap(settings: Settings) -> Settings:
    """Settings with a concrete bootstrap: the configured one, or the embedded local broker's."""
    if settings.kafka.bootstrap:
        return settings
    bootstrap = ensure_local_broker(settings)
    return settings.model_copy(update={"kafka": settings.kafka.model_copy(update={"bootstrap": bootstrap})})
