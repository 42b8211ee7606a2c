"""Two real workers on the session broker: axes split across them, one is SIGKILLed, the other takes over."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from aiokafka import AIOKafkaProducer

from processors.models import Briefing
from streams import kafka_io
from streams.control import await_briefing, new_command, send_command
from streams.oneshot import wait_ingested
from streams.ownership import key_partition
from streams.settings import Settings
from streams.watcher import publish_root
from streams.worker_process import free_port
from tests.support import async_wait_for, read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
PARTITIONS = 4
# Today's close falls due this long after the test began: after both workers started, split the partitions and
# answered yesterday's close, which took 20 s of it under a load of 5-6 (and the ingests as long again).
CLOSE_AFTER_SECONDS = 45
# With 4 partitions these land on 0, 2 and 3 (murmur2, as Kafka's default partitioner): each of two
# workers holding two partitions owns at least one of them.
AXES = {"inference": "vLLM serving KV cache", "risk": "security attack", "llm-application": "agent RAG"}


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _note(axis: str, name: str, body: str) -> tuple[str, str]:
    rel = f"inbox/tom/2026-09-27-1{len(name):03d}-{axis}-{name}.md"
    return rel, f"---\naxes: [{axis}]\n---\n# {axis} {name}\n\n{AXES[axis]}: {body}\n"


def _status(settings: Settings) -> dict[str, Any]:
    try:
        response = httpx.get(worker_url(settings, "/status"), timeout=10)
    except httpx.HTTPError:
        return {}
    return dict(response.json()) if response.status_code == 200 else {}


def _metric(settings: Settings, line_start: str) -> float:
    for line in httpx.get(worker_url(settings, "/metrics"), timeout=5).text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _owners(workers: list[Settings]) -> dict[str, int]:
    """axis → index of the worker reporting it, once every worker has caught up."""
    owners: dict[str, int] = {}
    for i, w in enumerate(workers):
        body = _status(w)
        if not body or body.get("catching_up"):
            return {}
        for entry in body["axes"]:
            owners[entry["axis"]] = i
    return owners


def test_the_three_axes_land_on_three_partitions() -> None:
    assert len({key_partition(a, PARTITIONS) for a in AXES}) == 3


async def test_a_killed_workers_axes_are_rebuilt_by_the_survivor(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The scheduled close falls due once both workers run: the leader sends it for every axis, the owners
    # answer. (close_at has whole seconds; the grace period is left out.)
    close_end = (datetime.now(SH) + timedelta(seconds=CLOSE_AFTER_SECONDS)).replace(microsecond=0)
    base = make_settings(
        close_enabled=True, close_at=close_end.time(), grace_seconds=0.0, close_check_seconds=1.0
    )
    kafka = base.kafka.model_copy(update={"partitions": PARTITIONS, "session_timeout_seconds": 8.0})
    s = base.model_copy(update={"kafka": kafka})
    workers = [
        s.model_copy(update={"state_dir": tmp_path / f"w{i}" / "state", "web_port": free_port()})
        for i in (0, 1)
    ]
    await kafka_io.ensure_topics(s)
    assert await kafka_io.check_topics(s) == PARTITIONS

    with (
        running_worker(workers[0], tmp_path / "w0", "worker-0") as first,
        running_worker(workers[1], tmp_path / "w1", "worker-1") as second,
    ):
        procs = [first, second]

        def split() -> bool:
            owned = [_status(w).get("owned_partitions") for w in workers]
            return all(o and len(o) == 2 for o in owned)

        # Both workers hold partitions before any document exists: the survivor never saw the others.
        await async_wait_for(split, 90, "the partitions to split 2 + 2")
        # Faust's assignor gives each worker the same partition numbers of the co-partitioned topics.
        for w in workers:
            body = _status(w)
            assert body["control_partitions"] == body["owned_partitions"], body

        def closes() -> list[list[float]]:
            return [
                [
                    _metric(w, f'predigest_briefings_emitted_total{{axis="{a.name}",trigger="close"}}')
                    for w in workers
                ]
                for a in s.axes
            ]

        # At start the leader caught up with yesterday's close (the schedule's catch-up, whoever owned what). Checked
        # before the notes are ingested: today's close is due CLOSE_AFTER_SECONDS after the test began, and under
        # load the two starts, the split and two ingests took longer than that (today's close came first).
        await async_wait_for(
            lambda: all(sum(c) == 1 for c in closes()) or datetime.now(SH) >= close_end,
            CLOSE_AFTER_SECONDS,
            "yesterday's close of every axis",
        )
        assert datetime.now(SH) < close_end, "the workers took too long to start: today's close came first"
        before = closes()

        notes = {axis: [_note(axis, n, f"note {n} of {axis}") for n in ("a", "bb", "ccc")] for axis in AXES}
        for written in notes.values():
            for rel, text in written:
                _write(s.root, rel, text)
        _write(s.root, "living/risk.md", "# risk.md v1.2\n\n## §1 Attacks\n\nsecurity attack surface\n")
        await publish_root(s, follow=False, stop=asyncio.Event())
        await wait_ingested(s, 90)
        # A second version of "bb" and a deletion of "ccc", for every axis.
        for axis, written in notes.items():
            rel, _ = written[1]
            _write(s.root, rel, _note(axis, "bb", f"note bb of {axis}, edited")[1])
            (s.root / written[2][0]).unlink()
        await publish_root(s, follow=False, stop=asyncio.Event())
        await wait_ingested(s, 90)

        owners: dict[str, int] = {}

        def owned_by_both() -> bool:
            owners.update(_owners(workers))
            return set(AXES) <= set(owners) and {owners[a] for a in AXES} == {0, 1}

        await async_wait_for(owned_by_both, 60, "both workers to report their axes")

        await async_wait_for(lambda: all(sum(c) == 2 for c in closes()), 60, "today's close of every axis")
        for a, was, now in zip(s.axes, before, closes(), strict=True):
            # Sent once by the leader, answered by the owner alone.
            owner = next(
                i for i, w in enumerate(workers) if a.name in {e["axis"] for e in _status(w)["axes"]}
            )
            assert [n - b for n, b in zip(now, was, strict=True)] == [
                1.0 if j == owner else 0.0 for j in (0, 1)
            ]

        victim = owners["risk"]
        survivor = 1 - victim
        taken = sorted(a for a, i in owners.items() if i == victim)
        replayed_before = _metric(
            workers[survivor], 'predigest_state_replayed_records_total{stage="documents"}'
        )

        procs[victim].kill()  # SIGKILL: no revocation, no commit, its DuckDB stays where it was
        procs[victim].wait()

        def took_over() -> bool:
            body = _status(workers[survivor])
            axes = {e["axis"]: e["ready"] for e in body.get("axes", [])}
            return set(AXES) <= set(axes) and all(axes.values()) and not body["catching_up"]

        await async_wait_for(took_over, 90, f"worker-{survivor} to take over {taken}")
        replayed = _metric(workers[survivor], 'predigest_state_replayed_records_total{stage="documents"}')
        # The victim's partitions were replayed from the retained topic: 3 notes, a second version,
        # a deletion (and the living document for risk) per axis it owned, in a record or more (a parse
        # batch's notes of one partition share one) per publish; the briefings below show them all.
        assert replayed - replayed_before >= 2 * len(taken)

        for axis in AXES:
            await send_command(s, axis, "flush", END)
        briefings = {axis: await await_briefing(s, axis, END, "flush", 90) for axis in AXES}

        # A command on a partition that is not its axis's is refused, not answered from another state.
        wrong = (key_partition("risk", PARTITIONS) + 1) % PARTITIONS
        producer = AIOKafkaProducer(**kafka_io.client_kwargs(s))
        await producer.start()
        try:
            command = new_command("risk", "close", END, datetime.now(UTC))
            await producer.send_and_wait(
                s.kafka.topic("control"), command.model_dump_json().encode(), key=b"risk", partition=wrong
            )
        finally:
            await producer.stop()

        def refused() -> bool:
            line = 'predigest_commands_ignored_total{reason="misrouted"}'
            return _metric(workers[survivor], line) == 1.0

        await async_wait_for(refused, 30, "the misrouted command to be refused")
        await asyncio.sleep(3)  # a few more close checks, by the leader that took over if it was the victim
        records = await read_topic(s, "briefings")

    emitted = sorted(
        (b.axis, b.trigger, b.window.end) for b in (Briefing.model_validate_json(v) for _, v in records)
    )
    # Exactly one briefing per axis, trigger and window: the flushes, and two scheduled closes of every axis.
    yesterday = close_end - timedelta(days=1)
    closes_sent = [(a.name, "close", end) for a in s.axes for end in (yesterday, close_end)]
    assert emitted == sorted([(a, "flush", END) for a in AXES] + closes_sent)
    for axis, briefing in briefings.items():
        _check_sources(briefing, axis, list(notes.values()))
    assert briefings["risk"].living_doc.version == "v1.2"


def _check_sources(briefing: Briefing, axis: str, written: list[list[tuple[str, str]]]) -> None:
    """Every axis weighs every note: each axis's current, superseded and deleted notes are in every briefing."""
    by_status: dict[str, set[str]] = {}
    for source in briefing.sources:
        by_status.setdefault("superseded" if source.status == "superseded" else "current", set()).add(
            source.path
        )
    current = {path for (a, _), (bb, _), _ in written for path in (a, bb)}
    assert by_status.get("current") == current, (axis, briefing.sources)
    assert by_status.get("superseded") == {bb for _, (bb, _), _ in written}, (axis, briefing.sources)
    assert not {ccc for _, _, (ccc, _) in written} & {s.path for s in briefing.sources}
