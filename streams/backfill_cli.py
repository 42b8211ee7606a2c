"""The `predigest backfill` command: its progress bar, its summary line, and its stop at SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from aiokafka.errors import KafkaError, MessageSizeTooLargeError

from sinks.errors import LedgerWriteError
from streams import heap, logs
from streams.backfill import DEFAULT_COMPRESSION, BackfillReport, Compression, backfill
from streams.errors import SendRefusedError, StoppedBySignalError
from streams.settings import Settings
from streams.stopping import install_stop, until_stopped

if TYPE_CHECKING:  # rich is imported only when a bar is drawn
    from rich.console import Console

log = logging.getLogger(__name__)
STDERR_FD = 2  # where the bar is drawn


class AboveTheBar:
    """A log stream whose lines the bar's console prints above the bar, each whole: not wrapped, marked up or cut."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._part = ""

    def write(self, text: str) -> int:
        *lines, self._part = (self._part + text).split("\n")
        if lines:  # a record's lines (a traceback's) printed at once: the bar is not redrawn between them
            self._console.out("\n".join(lines), highlight=False)
        return len(text)


async def backfill_with_bar(
    settings: Settings,
    report: BackfillReport,
    *,
    compression: Compression = DEFAULT_COMPRESSION,
) -> BackfillReport:
    """`backfill` with a rich progress bar on stderr: files, bytes, rate and time left; `report` filled in."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(
        TextColumn("[bold]backfill"),
        BarColumn(),
        TextColumn("{task.fields[done]}/{task.fields[count]} files"),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),  # the terminal `show` was asked of: not stdout, which may be a file
    )
    # The bar advances by bytes (notes range from a few KB to MB); the file count rides along as fields.
    task = bar.add_task("backfill", total=None, done=0, count="?")
    done = [0]

    def on_total(count: int, size: int) -> None:
        bar.update(task, total=size, count=count)

    def advance(count: int, size: int) -> None:
        done[0] += count
        bar.update(task, advance=size, done=done[0])

    # The log lines go above the bar, before it starts and after it stops too: never into its line.
    with logs.stderr_lines_to(AboveTheBar(bar.console)), bar:
        return await backfill(
            settings, compression=compression, on_total=on_total, progress=advance, report=report
        )


async def run_cli(settings: Settings, compression: Compression, *, show: bool) -> BackfillReport:
    """The command: the bar, then one summary line (also when stderr is not a terminal).

    SIGINT/SIGTERM only set a flag, which cancels the backfill (never an exception raised into whatever runs, the
    producer's own tasks included): the batches already handed over are waited for, what Kafka acknowledged is
    written to the ledger, the producer stops, and StoppedBySignalError says where it was. Still running 10 s
    later, or at a second signal, it exits at once."""
    heap.set_thresholds(heap.BULK)
    report = BackfillReport()
    stop = asyncio.Event()
    stopping = install_stop(
        stop,
        before_exit=_end_the_bar if show else None,
        again_exits=True,
        doing=lambda: f"{report.step}: {report.published} published",
    )
    if show:
        work = backfill_with_bar(settings, report, compression=compression)
    else:  # no bar to draw: rich is not imported (a tenth of the start's imports, docs/performance.md)
        work = backfill(settings, compression=compression, report=report)
    try:
        await until_stopped(work, stop, stopping)
    except StoppedBySignalError as exc:
        raise StoppedBySignalError(exc.signum, _stopped(report)) from None
    except KafkaError as exc:
        raise _refused(exc, report) from exc
    except LedgerWriteError as exc:
        # Raised over the Kafka failure that stopped the backfill (the ledger's last write, in a `finally`): each
        # is said, in a line of its own; the ledger's, raised, is the command's last.
        if (behind := _kafka_failure(exc)) is not None:
            log.error("%s", _refused(behind, report))
        raise
    rate = report.published / report.seconds if report.seconds else 0.0
    log.info(
        "backfill done: %d published (%.1f MB, %.0f files/s), %d already acknowledged, %d unchanged, %d refused",
        report.published,
        report.bytes / 1e6,
        rate,
        report.skipped,
        report.unchanged_bytes,
        report.refused,
    )
    return report


def _refused(exc: KafkaError, report: BackfillReport) -> SendRefusedError:
    """The one line of a Kafka failure that ended the backfill (was a traceback, exit 1)."""
    why = str(exc) or type(exc).__name__
    if isinstance(exc, MessageSizeTooLargeError):
        why += ": a batch is over the raw topic's max.message.bytes; raise it, or pass --compression zstd"
    return SendRefusedError(
        f"Kafka did not take the backfill's records while {report.step} ({why}); {report.published} file(s) "
        "published before it; a re-run sends the rest"
    )


def _kafka_failure(exc: BaseException) -> KafkaError | None:
    """The Kafka error an exception was raised over, if any (its __context__, or that one's)."""
    behind = exc.__cause__ or exc.__context__
    while behind is not None and not isinstance(behind, KafkaError):
        behind = behind.__cause__ or behind.__context__
    return behind


def _end_the_bar() -> None:
    """Before a hard exit while the bar is drawn: the cursor rich hid shown again, the shell's prompt below the bar."""
    # Straight to the descriptor: the signal's handler may have interrupted this thread inside rich's locks.
    os.write(STDERR_FD, b"\x1b[?25h\n")


def _stopped(report: BackfillReport) -> str:
    """Where the backfill was when a signal stopped it, and what it left for a re-run."""
    return (
        f" while {report.step}: {report.published} file(s) published and recorded in the ledger;"
        " a re-run sends the rest"
    )
