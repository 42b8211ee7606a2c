"""The worker's dead letters: each record a stage could not read or process goes to `<prefix>.dead`, counted; a
stage whose failures are systematic stops the worker with one line (exit 78) instead of dead-lettering everything.

The stop is remembered in `state_dir/dead-letter-stop.json` (`Settings.dead_letter_stop_file`): after a restart the
stage's first failure stops it again, its first success clears the file. A bad deploy restarted by its supervisor
therefore skips nothing more; `predigest dead resume` clears the file when the records really are bad.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from processors.dead_letters import (
    STAGES,
    DeadLetter,
    Failure,
    FailureLimits,
    FailureTracker,
    Stage,
    Trip,
    replays_of,
)
from processors.parse_stage import Routed
from sinks.clock import Clock
from sinks.metrics import Metrics
from streams.failstop import halt
from streams.settings import Settings

if TYPE_CHECKING:  # only for annotations: importing the topics (Faust, aiohttp) cost every command ~0.25 s
    from faust.types import EventT

    from streams.topics import Outputs

log = logging.getLogger(__name__)

LIMIT_EXIT_CODE = 78  # EX_CONFIG: something is systematically wrong; distinct from failstop's 75 (try again)


@dataclass(frozen=True)
class Origin:
    """Where a record was read: what a dead letter keeps of it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    note: int | None = None  # a note of the record (v5 documents) that failed alone; its value is the note's


def headers_of(raw: Any) -> tuple[tuple[str, bytes], ...]:
    """A record's headers as (name, bytes) pairs, whatever shape the consumer handed them in."""
    if not raw:
        return ()
    items = raw.items() if isinstance(raw, Mapping) else raw
    return tuple((str(k), bytes(v or b"")) for k, v in items)


def origin_of(event: EventT[bytes]) -> Origin:
    """Where an agent's event was read, its key and value as bytes."""
    msg = event.message
    key, value = msg.key, msg.value
    return Origin(
        topic=msg.topic,
        partition=msg.partition,
        offset=msg.offset,
        key=key if isinstance(key, bytes) or key is None else str(key).encode(),
        value=value if isinstance(value, bytes) or value is None else str(value).encode(),
        headers=headers_of(msg.headers),
    )


def routing_failure(routed: Routed) -> Failure | None:
    """Why a raw record was not routed: unreadable, or routing raised (it is then also listed as rejected)."""
    if routed.unreadable is not None:
        return Failure("unreadable", routed.unreadable)
    if routed.error is not None:
        return Failure("routing_failed", routed.error)
    return None


def read_stop_file(settings: Settings) -> dict[str, Any]:
    """The stages that stopped the worker before, with what stopped them; {} when none did."""
    path = settings.dead_letter_stop_file
    try:
        stages = json.loads(path.read_text(encoding="utf-8"))["stages"]
        return {s: stages[s] for s in STAGES if s in stages}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning(
            "%s cannot be read (%s); every stage stops at its first failure until it clears", path, exc
        )
        return {s: {} for s in STAGES}


def _write_stop_file(settings: Settings, stages: Mapping[str, Any]) -> None:
    path = settings.dead_letter_stop_file
    if not stages:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"stages": stages}, indent=2), encoding="utf-8")
    os.replace(tmp, path)


class DeadLetterPolicy:
    """Per stage, the outcomes of its records: the dead letters of the failed ones, or the stop."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        clock: Clock,
        stop: Callable[[int], NoReturn] | None = None,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self._stop = stop or halt
        d = settings.dead_letters
        limits = FailureLimits(d.max_consecutive, d.max_share, d.share_window)
        self._stopped = read_stop_file(settings)
        self._trackers = {s: FailureTracker(limits, latched=s in self._stopped) for s in STAGES}

    def sort(
        self,
        stage: Stage,
        outcomes: Sequence[tuple[Origin, Failure | None]],
        cause: BaseException | None = None,
    ) -> list[DeadLetter]:
        """Record each outcome in order and return the dead letters of the failures; stop on the limit (with the
        traceback of `cause`, the exception behind them, if one is known)."""
        tracker = self._trackers[stage]
        letters: list[DeadLetter] = []
        for origin, failure in outcomes:
            if failure is None:
                if tracker.success():
                    self._clear(stage)
                continue
            trip = tracker.failure()
            if trip is not None:
                self._halt(stage, origin, failure, trip, cause)
            letters.append(
                DeadLetter(
                    topic=origin.topic,
                    partition=origin.partition,
                    offset=origin.offset,
                    stage=stage,
                    reason=failure.reason,
                    error=failure.error,
                    failed_at=self._clock.now(),
                    key=origin.key,
                    value=origin.value,
                    headers=origin.headers,
                    replays=replays_of(origin.headers),
                    note=origin.note,
                )
            )
        return letters

    async def send(self, outputs: Outputs, letters: Sequence[DeadLetter]) -> None:
        """Put the letters on the dead-letter topic, then count them (run under must_finish)."""
        await outputs.dead(letters)
        for letter in letters:
            self._metrics.dead_letters.labels(stage=letter.stage, reason=letter.reason).inc()
        log.info(
            "sent %d record(s) to %s: %s",
            len(letters),
            self._settings.kafka.topic("dead"),
            ", ".join(f"{x.topic}[{x.partition}]@{x.offset} ({x.reason})" for x in letters[:10]),
        )

    def _clear(self, stage: Stage) -> None:
        self._stopped.pop(stage, None)
        _write_stop_file(self._settings, self._stopped)
        log.info("stage %s processes records again: its dead-letter stop is cleared", stage)

    def _halt(
        self, stage: Stage, origin: Origin, failure: Failure, trip: Trip, cause: BaseException | None
    ) -> NoReturn:
        self._stopped[stage] = {
            "topic": origin.topic,
            "partition": origin.partition,
            "offset": origin.offset,
            "reason": failure.reason,
            "rule": trip.rule,
            "at": self._clock.now().isoformat(),
        }
        try:
            _write_stop_file(self._settings, self._stopped)
        except OSError as exc:  # the stop matters more than remembering it
            log.warning("could not write %s: %s", self._settings.dead_letter_stop_file, exc)
        error = failure.error.strip().splitlines()[-1][:300] if failure.error.strip() else "?"
        log.critical(
            "stopping the worker (exit %d): %s on %s (last: partition %d offset %d, %s: %s); the record was "
            "not skipped. Look with `predigest dead list`, fix the cause and start the worker again; if the "
            "records really are bad, `predigest dead resume` lets it dead-letter them",
            LIMIT_EXIT_CODE,
            trip.describe(),
            origin.topic,
            origin.partition,
            origin.offset,
            failure.reason,
            error,
            exc_info=cause,
        )
        self._stop(LIMIT_EXIT_CODE)
