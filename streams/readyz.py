"""The `/readyz` answer of every predigest process (worker and watcher) from its checks: ready when each one is ok,
with `predigest_ready` set to match."""

from __future__ import annotations

from typing import Any

from prometheus_client import Gauge

Checks = dict[str, dict[str, Any]]


def readyz_answer(checks: Checks, ready: Gauge) -> tuple[bool, dict[str, Any]]:
    """(ready, the JSON body): `not_ready` names the failing checks, `checks` what each one found."""
    not_ready = [name for name, check in checks.items() if not check["ok"]]
    ready.set(0 if not_ready else 1)
    return not not_ready, {
        "status": "not_ready" if not_ready else "ready",
        "not_ready": not_ready,
        "checks": checks,
    }
