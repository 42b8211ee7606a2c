"""`predigest backfill` stopped by SIGTERM or Ctrl-C, on the real broker: one line naming the step, 143 or 130, no
asyncio noise, and a ledger that holds exactly what Kafka acknowledged, so that a re-run sends every file once."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from predigest_native import TypedColumns

import sinks.ledger
from bench.archive import generate
from streams import backfill_cli, kafka_io
from streams.backfill import BackfillReport, backfill
from streams.errors import StoppedBySignalError
from streams.settings import Settings
from streams.stopping import Stopping, until_stopped
from tests.support import raw_paths

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROJECT = Path(__file__).resolve().parents[2]
NOTES = 6000  # ~75 MB: still sending, at ~9,000 notes/s bare, well after the signal
SENDING = 1000  # records Kafka acknowledged before the signal comes
STOPPED = (
    r"\S+ \S+ ERROR predigest: interrupted by {name} while (sending|finishing): (\d+) file\(s\) published and "
    r"recorded in the ledger; a re-run sends the rest\n"
)

# The command, with a SIGTERM sent to itself from within the ledger's write: its rows taken from the ledger's
# buffer, its INSERT not run yet (the one moment where an exception raised by the signal lost them).
SIGTERM_WITHIN_THE_LEDGERS_WRITE = """
import os, signal, sys
import sinks.ledger
from streams.cli import main

columns = sinks.ledger.TypedColumns

def signalled(*args):
    os.kill(os.getpid(), signal.SIGTERM)
    return columns(*args)

sinks.ledger.TypedColumns = signalled
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("archive")
    generate(root, NOTES)
    return root


def _env(settings: Settings) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_KAFKA__BOOTSTRAP": settings.kafka.bootstrap or "",
        "PREDIGEST_KAFKA__TOPIC_PREFIX": settings.kafka.topic_prefix,
        "PREDIGEST_STATE_DIR": str(settings.state_dir),
    }


def _backfill(settings: Settings, *before: str) -> list[str]:
    return [
        sys.executable,
        *(before or ("-m", "streams.cli")),
        "backfill",
        "--root",
        str(settings.root),
        "--no-progress",
    ]


def _ledger(settings: Settings) -> set[str]:
    with duckdb.connect(str(settings.ledger_file), read_only=True) as db:
        return {str(row[0]) for row in db.execute("SELECT path FROM ledger").fetchall()}


async def _until_acknowledged(settings: Settings, proc: subprocess.Popen[str], records: int) -> None:
    """Wait until the raw topic holds `records` (or the command exited): the backfill is then well under way."""
    topic = settings.kafka.topic("raw")
    parts = [TopicPartition(topic, p) for p in range(settings.kafka.partitions)]
    consumer = AIOKafkaConsumer(**kafka_io.client_kwargs(settings))
    await consumer.start()
    try:
        while proc.poll() is None:
            if sum((await consumer.end_offsets(parts)).values()) >= records:
                return
            await asyncio.sleep(0.01)
    finally:
        await consumer.stop()


def _files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


def _rerun(settings: Settings) -> None:
    done = subprocess.run(
        _backfill(settings), cwd=PROJECT, env=_env(settings), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _each_file_once(settings: Settings, paths: list[str]) -> None:
    """The topic holds every file of the root exactly once, and the ledger each of them."""
    sent = Counter(paths)
    assert [p for p, n in sent.items() if n > 1] == []
    assert len(sent) == _files(settings.root) and _ledger(settings) == set(sent)


def _rerun_sends_the_rest_once(settings: Settings) -> None:
    """A re-run completes the topic with every file of the root exactly once: nothing acknowledged sent again."""
    _rerun(settings)
    _each_file_once(settings, asyncio.run(raw_paths(settings)))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_sending_ends_in_one_line_with_what_kafka_acknowledged_in_the_ledger(
    make_settings: Callable[..., Settings], archive: Path, sig: int
) -> None:
    settings = make_settings(root=archive)
    with subprocess.Popen(
        _backfill(settings), cwd=PROJECT, env=_env(settings), stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stderr is not None
            next(line for line in proc.stderr if "backfill of" in line)  # its topics are there
            asyncio.run(_until_acknowledged(settings, proc, SENDING))
            proc.send_signal(sig)
            rest = proc.stderr.read()
            code = proc.wait(timeout=30)
        finally:
            proc.kill()
    assert code == 128 + sig, rest[-3000:]
    sent = asyncio.run(raw_paths(settings))
    assert 0 < len(sent) < _files(archive) and len(set(sent)) == len(sent)
    # Every batch Kafka acknowledged is in the ledger, where the producer's stop delivered the last ones unrecorded
    # (a re-run sent them again).
    assert _ledger(settings) == set(sent)
    said = re.fullmatch(STOPPED.format(name=signal.Signals(sig).name), rest)
    assert said, rest[-3000:]  # that one line: no traceback, no "Task was destroyed but it is pending!"
    assert int(said[2]) == len(sent)
    _rerun_sends_the_rest_once(settings)


def test_a_sigterm_within_the_ledgers_write_lets_the_write_finish(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    generate(settings.root, 1000)  # fewer than 2000 files: the ledger is written once, at the end
    harness = ("-c", SIGTERM_WITHIN_THE_LEDGERS_WRITE)
    done = subprocess.run(
        _backfill(settings, *harness),
        cwd=PROJECT,
        env=_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-3000:]
    sent = asyncio.run(raw_paths(settings))
    assert len(sent) == len(set(sent)) == _files(settings.root)
    assert _ledger(settings) == set(sent), "the rows of the write the signal came in were lost"
    _rerun_sends_the_rest_once(settings)


async def test_a_stop_during_the_producers_stop_still_closes_the_ledger(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As above, in this process: the stop comes at the ledger's last write, so the cancellation lands in the
    # producer's stop, whose CancelledError skipped the ledger's close (the file locked until garbage-collected).
    settings = make_settings()
    generate(settings.root, 50)
    stop = asyncio.Event()

    def signalled(*args: Any) -> TypedColumns:
        stop.set()  # what a signal's handler does (streams.stopping.install_stop)
        return TypedColumns(*args)

    monkeypatch.setattr(sinks.ledger, "TypedColumns", signalled)
    with pytest.raises(StoppedBySignalError):
        await until_stopped(backfill(settings), stop, Stopping(signum=signal.SIGTERM))
    monkeypatch.undo()
    _rerun(settings)  # another process opens the ledger while this one still runs: this one let it go
    _each_file_once(settings, await raw_paths(settings))


async def test_the_bar_on_a_terminal_ends_at_every_file_sent(
    make_settings: Callable[..., Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    # Without a terminal the bar is not built (nor rich imported); with one, it still counts every file sent,
    # on stderr, the terminal it was shown for: `predigest backfill > out` gets no bar in its file.
    settings = make_settings()
    stats = generate(settings.root, 12)
    report = await backfill_cli.backfill_with_bar(settings, BackfillReport(), compression="none")
    assert report.published == stats.files
    shown = capsys.readouterr()
    assert f"{stats.files}/{stats.files} files" in shown.err
    assert shown.out == ""


# What a terminal shows of a line: the text after its last carriage return, less the codes that print nothing
# (erase the line, hide or show the cursor). A log line drawn into the bar's line keeps the bar's text before it.
_UNPRINTED = re.compile(r"\x1b\[(2K|\?25[hl])")
_STYLE = re.compile(r"\x1b\[[0-9;]*m")  # the bar's colours; a log line has none
TEXT_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING) streams\.[a-z_.]+: [ -~]+")
REFUSED = ("[bold]one.md", "two.md", "three.md")  # symlinks: refused, their paths shown as they are


def _on_a_terminal(settings: Settings, env: dict[str, str]) -> tuple[int, list[str]]:
    """`predigest backfill` with a pseudo-terminal 80 columns wide as its stderr: its exit code and the lines
    the terminal shows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    command = _backfill(settings)[:-1]  # with its bar
    with subprocess.Popen(
        command, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave
    ) as proc:
        os.close(slave)
        try:
            shown = _read_until_closed(master)
            code = proc.wait(timeout=30)
        finally:
            os.close(master)
            proc.kill()  # still running only when it hung
    lines = shown.decode().split("\n")
    return code, [_UNPRINTED.sub("", line.rstrip("\r").rsplit("\r", 1)[-1]) for line in lines]


def _read_until_closed(master: int) -> bytes:
    """Everything written to the terminal until the command closed it (or 120 s passed)."""
    out, deadline = bytearray(), time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command exited, the terminal's last writer gone
                break
            if not chunk:
                break
            out += chunk
    return bytes(out)


@pytest.mark.parametrize("log_json", [False, True], ids=["text", "json"])
def test_log_lines_written_while_the_bar_is_drawn_come_whole_above_it(
    make_settings: Callable[..., Settings], log_json: bool
) -> None:
    # The CLI's handler held the stderr of its making, which rich's redirection misses: its lines were written
    # after the bar's text on the bar's line. Each is now a line of its own, unwrapped at 80 columns (JSON too).
    settings = make_settings()
    stats = generate(settings.root, 30)
    for name in REFUSED:
        (settings.root / "inbox" / name).symlink_to(settings.root / stats.paths[0])
    env = {**_env(settings), "TERM": "xterm", "PREDIGEST_LOG_JSON": str(log_json).lower()}
    code, shown = _on_a_terminal(settings, env)
    assert code == 0, shown[-20:]
    records = [line for line in shown if "streams." in line]
    if log_json:
        said = [json.loads(line)["message"] for line in records]
    else:
        assert [line for line in records if not TEXT_RECORD.fullmatch(line)] == []
        said = [line.split(": ", 1)[1] for line in records]
    refused = [m for m in said if m.startswith("refusing ")]
    assert sorted(refused) == sorted(
        f"refusing inbox/{n}: it is a symlink; only regular files under the root are read" for n in REFUSED
    )
    assert any(m.startswith("backfill of ") for m in said) and said[-1].startswith("backfill done: ")
    files = _files(settings.root)
    bars = [_STYLE.sub("", line) for line in shown if _STYLE.sub("", line).startswith("backfill ")]
    assert f" {files}/{files} files " in bars[-1], bars[-1]


def test_a_second_signal_while_the_bar_is_drawn_leaves_the_terminal_s_cursor_shown(tmp_path: Path) -> None:
    # Before: the hard exit left the cursor rich hid at the bar's start hidden, and the shell's prompt on the bar's
    # line. A broker that accepts and never answers keeps the backfill starting, the bar drawn.
    (tmp_path / "root/inbox/jay").mkdir(parents=True)
    (tmp_path / "root/inbox/jay/2026-09-27-1000-a.md").write_text("# a\n", encoding="utf-8")
    with socket.create_server(("127.0.0.1", 0)) as silent:
        env = {
            "PATH": "/usr/bin:/bin",
            "TERM": "xterm",
            "PREDIGEST_KAFKA__BOOTSTRAP": f"127.0.0.1:{silent.getsockname()[1]}",
            "PREDIGEST_STATE_DIR": str(tmp_path / "state"),
        }
        master, slave = pty.openpty()
        command = [sys.executable, "-m", "streams.cli", "backfill", "--root", str(tmp_path / "root")]
        with subprocess.Popen(
            command, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave
        ) as proc:
            os.close(slave)
            try:
                shown = bytearray()
                while b" files " not in shown:  # the bar is drawn
                    assert select.select([master], [], [], 30)[0], bytes(shown)
                    shown += os.read(master, 65536)
                proc.send_signal(signal.SIGTERM)  # (two SIGINTs at once would be delivered as one)
                proc.send_signal(signal.SIGINT)  # a second signal: no more waiting
                shown += _read_until_closed(master)
                code = proc.wait(timeout=30)
            finally:
                os.close(master)
                proc.kill()
    assert code in (128 + signal.SIGINT, 128 + signal.SIGTERM), bytes(shown[-300:])
    assert b" again: exiting now" in shown
    assert shown.rfind(b"\x1b[?25h") > shown.rfind(b"\x1b[?25l") >= 0, bytes(shown[-300:])
    assert shown.endswith(b"\n"), bytes(shown[-300:])  # the shell's prompt on a line of its own
