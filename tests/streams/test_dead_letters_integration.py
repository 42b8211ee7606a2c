"""The dead-letter topic on the real broker: garbage on every stage and a hostile command land in `predigest.dead`
with their origin while the worker answers on; `dead list` shows them, `dead replay` re-drives one after the fix
and it is answered once; a run of garbage stops the worker with one line (exit 78), and stays stopped until
`dead resume`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from processors.dead_letters import DeadLetter, dead_headers
from processors.fan_out import route_read
from processors.models import AxisSpec
from processors.raw_record import raw_record
from processors.wire import decode_rows, encode_events
from processors.wire_frames import MAX_RECORD_BYTES, pack_notes
from streams import control, kafka_io
from streams.control import await_briefing, new_command
from streams.settings import DEFAULT_AXES, DeadLetterSettings, Settings
from streams.worker_process import PROJECT, dump_settings, spawn_worker, stop_process
from tests.processors.test_wire_v6_bound import bomb
from tests.state_support import raw_file
from tests.streams.fault_support import metric, worker_metrics
from tests.support import async_wait_for, read_topic, running_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROBOTICS = AxisSpec(name="robotics", keywords=("robot", "机器人"))
GARBAGE_DOCUMENT = b"predigest.documents/v2\n{this is not a header"


async def produce(s: Settings, stage: str, key: bytes | None, value: bytes) -> None:
    producer = kafka_io.make_producer(s)
    await producer.start()
    try:
        await (await producer.send(s.kafka.topic(stage), value, key=key))
    finally:
        await producer.stop()


def cli(s: Settings, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cfg = dump_settings(s, workdir / f"cli-{uuid4().hex[:6]}-settings.json")
    cmd = [sys.executable, "-m", "streams.cli", "--settings-json", str(cfg), *args]
    return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120, check=False)


def dead_list(s: Settings, workdir: Path) -> list[dict[str, Any]]:
    done = cli(s, workdir, "dead", "list", "--json")
    assert done.returncode == 0, done.stderr
    letters: list[dict[str, Any]] = json.loads(done.stdout)["dead_letters"]
    return letters


def flushed(s: Settings, axis: str) -> float:
    return metric(worker_metrics(s), "predigest_briefings_emitted_total", axis=axis, trigger="flush") or 0.0


async def test_garbage_on_every_stage_is_dead_lettered_listed_and_a_fixed_command_replayed_is_answered_once(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(flush_max_past_days=366)
    await kafka_io.ensure_topics(s)
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    hostile = new_command("robotics", "flush", end, datetime.now(UTC))  # an axis this deploy lacks
    with running_worker(s, tmp_path) as worker:
        await produce(s, "raw", b"inbox/jay/2026-09-27-garbage.md", b"\x00\xffnot a raw file")
        await produce(s, "documents", b"inference", GARBAGE_DOCUMENT)
        await control.send(s, hostile)  # straight onto the topic, past the door
        await control.send(s, new_command("inference", "flush", end, datetime.now(UTC)))
        await await_briefing(s, "inference", end, "flush", 90)  # the worker answers on
        await async_wait_for(lambda: len(dead_list(s, tmp_path)) == 3, 60, "three dead letters")
        assert worker.poll() is None
        for stage, reason in (
            ("raw", "unreadable"),
            ("documents", "unreadable"),
            ("control", "unknown_axis"),
        ):
            assert metric(worker_metrics(s), "predigest_dead_letters_total", stage=stage, reason=reason) == 1

    letters = {x["stage"]: x for x in dead_list(s, tmp_path)}
    for stage in ("raw", "documents", "control"):
        x = letters[stage]
        assert (x["topic"], x["partition"], x["offset"]) == (s.kafka.topic(stage), 0, 0), x
        assert datetime.fromisoformat(x["failed_at"]) > datetime.now(UTC) - timedelta(minutes=5)
    assert (
        letters["raw"]["key"] == "inbox/jay/2026-09-27-garbage.md"
        and "not a raw file" in letters["raw"]["preview"]
    )
    assert letters["documents"]["preview"].startswith("predigest.documents/v2")
    assert letters["control"]["reason"] == "unknown_axis" and "robotics" in letters["control"]["error"]
    # The original bytes, intact, on the dead-letter topic.
    values = {value for _, value in await read_topic(s, "dead")}
    assert {b"\x00\xffnot a raw file", GARBAGE_DOCUMENT, hostile.model_dump_json().encode()} <= values
    table = cli(s, tmp_path, "dead", "list")
    assert (
        table.returncode == 0 and "unknown_axis" in table.stdout and "3 of 3 dead letter(s)" in table.stdout
    )

    # The fix: the axis is configured. The refused command, re-driven twice, makes one briefing.
    fixed = s.model_copy(update={"axes": (*DEFAULT_AXES, ROBOTICS)})
    with running_worker(fixed, tmp_path, name="fixed"):
        for _ in range(2):
            done = cli(fixed, tmp_path, "dead", "replay", "--ids", letters["control"]["id"])
            assert done.returncode == 0, done.stderr
            assert f"replayed {letters['control']['id']} onto {s.kafka.topic('control')}[0]" in done.stderr
        await await_briefing(fixed, "robotics", end, "flush", 90)
        repeated = "predigest_briefing_commands_repeated_total"
        await async_wait_for(
            lambda: metric(worker_metrics(fixed), repeated, axis="robotics", trigger="flush") == 1,
            60,
            "the repeat",
        )
        assert flushed(fixed, "robotics") == 1
    briefings = [json.loads(v) for k, v in await read_topic(s, "briefings") if k == b"robotics"]
    assert [(b["axis"], b["trigger"]) for b in briefings] == [("robotics", "flush")]
    assert len(list((s.out_dir / "robotics").glob("*-e1prep-flush-*.md"))) == 1
    assert len(dead_list(s, tmp_path)) == 3  # nothing failed again


def _kv_note(s: Settings) -> tuple[bytes, bytes]:
    """A note that reads, as its key and v4 record on the documents topic."""
    note = raw_file("inbox/jay/2026-09-27-1000-kv.md", b"# vLLM KV cache inference\n")
    events = route_read(note, s.axes, zone=s.tz, max_bytes=1 << 20, seen_at=datetime.now(UTC), raw_offset=0)[
        0
    ]
    [(key, good)] = encode_events(events, {})
    return key, good


async def test_the_notes_of_a_documents_record_that_do_not_read_are_dead_lettered_and_re_driven_each(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    key, good = _kv_note(s)
    [(_, record)] = pack_notes([(key, good), (key, b"bad note one"), (key, b"bad note two")], {}, 1 << 20)
    with running_worker(s, tmp_path) as worker:
        await produce(s, "documents", key, record)
        await async_wait_for(lambda: len(dead_list(s, tmp_path)) == 2, 60, "a dead letter per bad note")
        stored = "predigest_documents_stored_total"
        assert metric(worker_metrics(s), stored, axis="inference", kind="inbox") == 1  # the good note
        letters = dead_list(s, tmp_path)
        assert [(x["offset"], x["note"], x["preview"]) for x in letters] == [
            (0, 1, "bad note one"),
            (0, 2, "bad note two"),
        ]
        # Two letters of one record: each is re-driven (alone, as the v4 record it was), and fails again.
        done = cli(s, tmp_path, "dead", "replay", "--ids", *(x["id"] for x in letters))
        assert done.returncode == 0 and done.stderr.count("replayed 0:") == 2, done.stderr
        await async_wait_for(lambda: len(dead_list(s, tmp_path)) == 4, 60, "the re-driven notes")
        again = dead_list(s, tmp_path)[2:]
        assert sorted((x["note"], x["replays"], x["preview"]) for x in again) == [
            (None, 1, "bad note one"),
            (None, 1, "bad note two"),
        ]
        assert worker.poll() is None


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


async def test_a_record_that_would_expand_to_a_gib_is_dead_lettered_unexpanded_and_the_next_one_stored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()
    await kafka_io.ensure_topics(s)
    key, good = _kv_note(s)
    [(_, record)] = pack_notes([(key, good)], {}, 1 << 20)
    with running_worker(s, tmp_path) as worker:
        await produce(s, "documents", key, bomb())  # ~32 KB declaring 1 000 bytes of notes: 1 GiB of them
        # ~800 bytes declaring the message limit: unpacked, its one note's dead letter was over the limit, and
        # the worker stopped on it at every start
        await produce(s, "documents", key, bomb(MAX_RECORD_BYTES, MAX_RECORD_BYTES))
        await produce(s, "documents", key, record)
        await async_wait_for(lambda: len(dead_list(s, tmp_path)) == 2, 60, "the bombs dead-lettered")
        stored = "predigest_documents_stored_total"
        await async_wait_for(
            lambda: metric(worker_metrics(s), stored, axis="inference", kind="inbox") == 1,
            60,
            "the good note",
        )
        assert worker.poll() is None and peak_rss_mib(worker.pid) < 1024  # the GiB was never there
        gib, limit = sorted(dead_list(s, tmp_path), key=lambda letter: int(letter["offset"]))
        assert (gib["offset"], gib["reason"], limit["offset"], limit["reason"]) == (
            0,
            "unreadable",
            1,
            "unreadable",
        )
        assert "do not decompress to the 1000 bytes its lengths declare" in gib["error"]
        assert f"declare {MAX_RECORD_BYTES} bytes of notes" in limit["error"]


def critical_lines(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if "CRITICAL" in line]


async def test_a_run_of_garbage_stops_the_worker_with_one_line_and_it_stays_stopped_until_resumed(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(flush_max_past_days=366, dead_letters=DeadLetterSettings(max_consecutive=5))
    await kafka_io.ensure_topics(s)
    with running_worker(s, tmp_path) as worker:
        for i in range(6):
            await produce(s, "raw", b"inbox/jay/x.md", f"garbage {i}".encode())
        wait_for(lambda: worker.poll() is not None, 60, "the worker to stop")
        assert worker.returncode == 78
    log = tmp_path / "worker.log"
    [line] = critical_lines(log)
    assert "stopping the worker (exit 78): 6 consecutive records failed on " + s.kafka.topic("raw") in line
    assert "predigest dead list" in line and "Traceback" not in log.read_text(errors="replace")

    # Restarted as a supervisor would: the record that stopped it comes again and stops it again.
    again = spawn_worker(s, tmp_path, name="again")
    try:
        wait_for(lambda: again.poll() is not None, 120, "the restarted worker to stop")
    finally:
        stop_process(again)
    assert again.returncode == 78
    assert "its first record since failed too" in critical_lines(tmp_path / "again.log")[0]

    # The operator decides these records are bad: resume, with room for them.
    done = cli(s, tmp_path, "dead", "resume")
    assert done.returncode == 0 and "stage raw resumes" in done.stderr
    roomier = s.model_copy(update={"dead_letters": DeadLetterSettings(max_consecutive=10)})
    with running_worker(roomier, tmp_path, name="resumed") as resumed:
        end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
        await control.send(roomier, new_command("risk", "flush", end, datetime.now(UTC)))
        await await_briefing(roomier, "risk", end, "flush", 90)
        await async_wait_for(lambda: len(dead_list(roomier, tmp_path)) >= 6, 60, "the garbage dead-lettered")
        assert resumed.poll() is None
    assert {x["offset"] for x in dead_list(roomier, tmp_path)} == set(range(6))


async def test_raw_records_an_older_worker_dead_lettered_are_read_once_replayed_byte_for_byte(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The upgrade in the wrong order (docs/operations.md): a watcher of this release wrote v2 records, a worker of
    # an earlier release could not read them and dead-lettered them `unreadable` (its letters made here as it
    # made them). After the upgrade, `dead replay` re-drives them as they are and this worker reads them; a v1
    # letter of before reads as well.
    s = make_settings()
    await kafka_io.ensure_topics(s)
    v2 = raw_record(raw_file("inbox/jay/2026-09-27-1000-kv.md", b"# vLLM KV cache inference\n"))
    v1 = raw_file("inbox/tom/2026-09-27-1100-kv.md", b"# KV cache eviction\n").model_dump_json().encode()
    producer = kafka_io.make_producer(s)
    await producer.start()
    try:
        for offset, (key, value) in enumerate(
            ((b"inbox/jay/2026-09-27-1000-kv.md", v2), (b"inbox/tom/x.md", v1))
        ):
            letter = DeadLetter(
                topic=s.kafka.topic("raw"),
                partition=0,
                offset=offset,
                stage="raw",
                reason="unreadable",
                error="1 validation error for RawFile",
                failed_at=datetime.now(UTC),
                key=key,
                value=value,
            )
            await (await producer.send(s.kafka.topic("dead"), value, key=key, headers=dead_headers(letter)))
    finally:
        await producer.stop()
    letters = dead_list(s, tmp_path)
    assert [(x["stage"], x["reason"], x["bytes"]) for x in letters] == [
        ("raw", "unreadable", len(v2)),
        ("raw", "unreadable", len(v1)),
    ]
    with running_worker(s, tmp_path) as worker:
        done = cli(s, tmp_path, "dead", "replay", "--ids", *(x["id"] for x in letters))
        assert done.returncode == 0 and done.stderr.count("replayed 0:") == 2, done.stderr

        async def paths() -> set[str]:
            return {
                row.header.path for _, value in await read_topic(s, "documents") for row in decode_rows(value)
            }

        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while (got := await paths()) != {
            "inbox/jay/2026-09-27-1000-kv.md",
            "inbox/tom/2026-09-27-1100-kv.md",
        }:
            assert datetime.now(UTC) < deadline, got
            await asyncio.sleep(0.5)
        assert worker.poll() is None
        assert metric(
            worker_metrics(s), "predigest_dead_letters_total", stage="raw", reason="unreadable"
        ) in (None, 0)
    replayed = [value for key, value in await read_topic(s, "raw")]
    assert replayed == [v2, v1]  # byte for byte
    assert len(dead_list(s, tmp_path)) == 2  # nothing failed again
