"""What the worker's `/readyz` answers: ready once Kafka answers, an assignment came, every owned partition's state
has caught up, and the state file is open and passed its last check; otherwise 503 naming what is not."""

from __future__ import annotations

from typing import Any

from sinks.metrics import Metrics
from streams.lag_probe import LagProbe
from streams.ownership import Ownership
from streams.readyz import readyz_answer
from streams.settings import Settings
from streams.state_guard import StateGuard, StateHolder

KAFKA_MAX_AGE_SECONDS = 10.0  # a Kafka reading older than this is probed again (shared with /status)


class Readiness:
    """Each check with what it found; `report()` also sets `predigest_ready`."""

    def __init__(
        self,
        settings: Settings,
        ownership: Ownership,
        pipeline: StateHolder,
        guard: StateGuard,
        lag: LagProbe,
        metrics: Metrics,
    ) -> None:
        self._settings = settings
        self._ownership = ownership
        self._pipeline = pipeline
        self._guard = guard
        self._lag = lag
        self._metrics = metrics

    async def report(self) -> tuple[bool, dict[str, Any]]:
        """(ready, the JSON body): `not_ready` lists the failing checks, `checks` what each one found."""
        max_age = min(self._settings.metrics_interval_seconds, KAFKA_MAX_AGE_SECONDS)
        # A reading up to three times that old answers at once (a new one is probed meanwhile): a health check
        # must answer fast, and the state checks below are read after this, when the answer is built.
        reading = await self._lag.recent(max_age, keep=3 * max_age)
        own = self._ownership
        catching_up = sorted(own.catching_up())
        guard = self._guard
        checks: dict[str, dict[str, Any]] = {
            "kafka": {"ok": reading.ok, "checked_at": reading.at.isoformat(), "error": reading.error},
            "assignment": {"ok": own.assignments > 0, "owned_partitions": sorted(own.owned_partitions)},
            "catch_up": {"ok": not catching_up, "catching_up": catching_up},
            "state": {
                "ok": self._pipeline.opened is not None and guard.problem is None,
                "open": self._pipeline.opened is not None,
                "checked_at": guard.checked_at.isoformat() if guard.checked_at else None,
                "problem": guard.problem,
                "rebuilding": guard.replacing,
                "last_rebuilt_after": guard.replaced,
            },
        }
        return readyz_answer(checks, self._metrics.ready)
