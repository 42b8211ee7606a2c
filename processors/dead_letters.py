"""Dead letters: a record no stage could read or process, kept whole with where it came from and why.

A dead letter is the original record (key and value byte for byte, its own headers kept) with `predigest.dead.*`
headers naming its source topic, partition and offset, the stage, a reason code, the error and the time, as
Kafka Connect's dead-letter queue does; `FailureTracker` is arroyo's dead-letter limit: too many failures in a
row, or too large a share of the recent records, mean something is systematically wrong (a bad deploy) and the
stage must stop instead of dead-lettering everything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

from processors.commands import COMMAND_REFUSALS, CommandRefusal
from processors.i18n import Lang

Stage = Literal["raw", "documents", "control"]
# briefing_failed: a command that passed the checks and whose answer raised at every attempt; briefing_memory: ran
# out of memory at every attempt, the state answering and the process's memory back after (streams.command_failures).
CommandFailure = Literal["briefing_failed", "briefing_memory"]
DeadLetterReason = Literal["unreadable", "routing_failed"] | CommandFailure | CommandRefusal
DEAD_LETTER_REASONS: tuple[str, ...] = (
    "unreadable",
    "routing_failed",
    *get_args(CommandFailure),
    *COMMAND_REFUSALS,
)
STAGES: tuple[Stage, ...] = get_args(Stage)

PREFIX = "predigest.dead."
VERSION = b"1"
MAX_ERROR_CHARS = 2000  # a traceback's last lines are the useful ones; the log has the rest

REASON_TEXT: dict[str, dict[Lang, str]] = {
    "unreadable": {"en": "not a record this version can read", "zh": "当前版本无法读取的记录"},
    "routing_failed": {"en": "routing the note failed (a bug)", "zh": "笔记路由失败（程序缺陷）"},
    "briefing_failed": {
        "en": "briefing the command failed every attempt (a bug)",
        "zh": "命令的简报每次生成都失败（程序缺陷）",
    },
    "briefing_memory": {
        "en": "briefing the command ran out of memory every attempt: raise PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB "
        "(PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB too for a StateMemoryError; or the worker's memory), then "
        "`predigest dead replay` re-runs it",
        "zh": "命令的简报每次生成都内存不足：调高 PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB（StateMemoryError 时也调高 "
        "PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB；或工作进程的内存）后，用 `predigest dead replay` 重新运行",
    },
    "unknown_axis": {"en": "command for an axis not configured", "zh": "命令指向未配置的主轴"},
    "naive_end": {"en": "command end without a UTC offset", "zh": "命令的窗口结束时间缺少时区偏移"},
    "end_too_old": {"en": "command end too far back", "zh": "命令的窗口结束时间过早"},
    "end_too_far_ahead": {"en": "command end too far ahead", "zh": "命令的窗口结束时间过晚"},
    "window_out_of_range": {"en": "command window off the calendar", "zh": "命令的窗口超出日历范围"},
}


def reason_text(reason: str, lang: Lang) -> str:
    """What a reason code means, in the operator's language (an unknown code as itself)."""
    return REASON_TEXT.get(reason, {}).get(lang, reason)


@dataclass(frozen=True)
class Failure:
    """Why one record was not processed: a code and a line for the operator."""

    reason: DeadLetterReason
    error: str


@dataclass(frozen=True)
class DeadLetter:
    """A failed record as it travels on the dead-letter topic."""

    topic: str
    partition: int
    offset: int
    stage: Stage
    reason: str
    error: str
    failed_at: datetime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()  # the record's own headers, kept for a replay
    replays: int = 0  # how many times this record was re-driven and failed again
    note: int | None = None  # the note of a v5 documents record that failed alone (the value is that note's)


def dead_headers(letter: DeadLetter) -> list[tuple[str, bytes]]:
    """The record's own headers, then the `predigest.dead.*` ones saying where it came from and why."""
    own = [(k, v) for k, v in letter.headers if not k.startswith(PREFIX)]
    error = letter.error if len(letter.error) <= MAX_ERROR_CHARS else "…" + letter.error[-MAX_ERROR_CHARS:]
    ours = {
        "version": VERSION,
        "topic": letter.topic.encode(),
        "partition": str(letter.partition).encode(),
        "offset": str(letter.offset).encode(),
        "stage": letter.stage.encode(),
        "reason": letter.reason.encode(),
        "error": error.encode("utf-8", "replace"),
        "time": letter.failed_at.isoformat().encode(),
        "replays": str(letter.replays).encode(),
    }
    if letter.note is not None:
        ours["note"] = str(letter.note).encode()
    return [*own, *((PREFIX + k, v) for k, v in ours.items())]


def read_dead_letter(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes]]
) -> DeadLetter | None:
    """The dead letter a record of the dead-letter topic carries; None when its headers are not ours."""
    ours = {k[len(PREFIX) :]: v for k, v in headers if k.startswith(PREFIX)}
    if ours.get("version") != VERSION:
        return None
    try:
        stage = ours["stage"].decode()
        return DeadLetter(
            topic=ours["topic"].decode(),
            partition=int(ours["partition"]),
            offset=int(ours["offset"]),
            stage=next(s for s in STAGES if s == stage),
            reason=ours["reason"].decode(),
            error=ours["error"].decode("utf-8", "replace"),
            failed_at=datetime.fromisoformat(ours["time"].decode()),
            key=key,
            value=value,
            headers=tuple((k, v) for k, v in headers if not k.startswith(PREFIX)),
            replays=int(ours.get("replays", b"0")),
            note=int(ours["note"]) if "note" in ours else None,
        )
    except (KeyError, ValueError, StopIteration, UnicodeDecodeError):
        return None


def replay_headers(letter: DeadLetter) -> list[tuple[str, bytes]]:
    """The headers a re-driven record carries: its own, and how often it was re-driven (if it fails again)."""
    return [*letter.headers, (PREFIX + "replays", str(letter.replays + 1).encode())]


def replays_of(headers: Sequence[tuple[str, bytes]]) -> int:
    """How many times a record was re-driven from the dead-letter topic (0 for an original record)."""
    for k, v in headers:
        if k == PREFIX + "replays":
            try:
                return int(v)
            except ValueError:
                return 0
    return 0


@dataclass(frozen=True)
class FailureLimits:
    """When a stage stops instead of dead-lettering: `max_consecutive` failures in a row (0: no limit), or more
    than `max_share` of the last `window` records (checked once that many were seen)."""

    max_consecutive: int
    max_share: float
    window: int


@dataclass(frozen=True)
class Trip:
    """Why a stage must stop: the rule that tripped and the counts behind it."""

    rule: Literal["consecutive", "share", "latched"]
    failures: int
    seen: int

    def describe(self) -> str:
        if self.rule == "consecutive":
            return f"{self.failures} consecutive records failed"
        if self.rule == "share":
            return f"{self.failures} of the last {self.seen} records failed"
        return "it stopped on failures before and its first record since failed too"


@dataclass
class FailureTracker:
    """One stage's recent outcomes, in the order its records were processed.

    `latched`: the stage stopped on its limit before this process started; its first failure stops it again
    and its first success clears the latch (`success` returns True then), so a bad deploy that is restarted
    skips nothing more, and a fixed one goes on.
    """

    limits: FailureLimits
    latched: bool = False
    consecutive: int = 0
    recent: deque[bool] = field(default_factory=deque)  # True: failed
    recent_failures: int = 0

    def success(self) -> bool:
        """Record a processed record; True when this cleared the latch."""
        self.consecutive = 0
        self._push(False)
        cleared, self.latched = self.latched, False
        return cleared

    def failure(self) -> Trip | None:
        """Record a failed record; the rule it trips, if any (the record is then not dead-lettered)."""
        if self.latched:
            return Trip("latched", 1, 1)
        self.consecutive += 1
        self._push(True)
        lim = self.limits
        if lim.max_consecutive and self.consecutive > lim.max_consecutive:
            return Trip("consecutive", self.consecutive, self.consecutive)
        if len(self.recent) >= lim.window and self.recent_failures > lim.max_share * lim.window:
            return Trip("share", self.recent_failures, len(self.recent))
        return None

    def _push(self, failed: bool) -> None:
        self.recent.append(failed)
        self.recent_failures += failed
        if len(self.recent) > self.limits.window:
            self.recent_failures -= self.recent.popleft()
