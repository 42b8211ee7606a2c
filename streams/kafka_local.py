"""The embedded default: start the project's local KRaft broker when no bootstrap is configured."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from streams.errors import BrokerUnavailableError
from streams.settings import Settings

log = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "kafka" / "kafka.sh"
# The broker's stop: SIGTERM, then SIGKILL this long after it (kafka.sh stop; its data stays either way).
BROKER_STOP_SECONDS = 30


def _run(
    args: list[str], cache: Path, timeout: float, stop_seconds: int = BROKER_STOP_SECONDS
) -> subprocess.CompletedProcess[str]:
    env = {
        "PREDIGEST_KAFKA_CACHE": str(cache.resolve()),
        "PREDIGEST_KAFKA_STOP_SECONDS": str(stop_seconds),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_broker(cache: Path, data_dir: Path) -> str:
    """Start (or find running) the local broker keeping its data in `data_dir`; returns its bootstrap."""
    result = _run(["start", str(data_dir.resolve())], cache, 900)
    bootstrap = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    if result.returncode != 0 or not bootstrap:
        raise BrokerUnavailableError(
            f"could not start the local Kafka broker ({SCRIPT} start exited {result.returncode}): "
            f"{result.stderr.strip()[-2000:]}. Set PREDIGEST_KAFKA__BOOTSTRAP to use an existing broker."
        )
    return bootstrap


def stop_broker(cache: Path, data_dir: Path, stop_seconds: int = BROKER_STOP_SECONDS) -> bool:
    """Stop the local broker of `data_dir` (SIGTERM, then SIGKILL after `stop_seconds`, said in a WARNING); its
    data stays. False when the stop did not finish (said in a line): it may still be stopping."""
    try:
        result = _run(["stop", str(data_dir.resolve())], cache, stop_seconds + 30, stop_seconds)
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
