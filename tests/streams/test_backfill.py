"""`predigest backfill` on the real broker: every file arrives once, a re-run publishes nothing."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.archive import generate
from processors.models import RawFile
from processors.raw_record import MAGIC, read_raw
from sinks.errors import LedgerWriteError
from sinks.ledger import Ledger
from streams import backfill as backfill_module
from streams import backfill_todo, kafka_io, root_files
from streams.backfill import backfill
from streams.kafka_io import key_partitioner
from streams.settings import Settings
from streams.watcher import publish_root
from tests.ledger_support import invalidated
from tests.support import ZSTD, batch_codecs, raw_paths, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PROJECT = Path(__file__).resolve().parents[2]


async def _keys_by_partition(settings: Settings) -> dict[int, list[bytes]]:
    """The raw topic's keys, partition by partition, in offset order."""
    topic = settings.kafka.topic("raw")
    consumer = AIOKafkaConsumer(
        **kafka_io.client_kwargs(settings), enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(settings.kafka.partitions)]
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        await consumer.seek_to_beginning(*parts)
        held: dict[int, list[bytes]] = {tp.partition: [] for tp in parts}
        while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                held[tp.partition].extend(r.key for r in records if r.key is not None)
        return held
    finally:
        await consumer.stop()


async def _raw(settings: Settings) -> list[RawFile]:
    values = [v for _, v in await read_topic(settings, "raw")]
    assert all(v.startswith(MAGIC) for v in values)  # v2: the files' bytes as they are
    return [read_raw(v) for v in values]


async def test_every_file_arrives_once_and_a_rerun_publishes_nothing(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings()
    stats = generate(settings.root, 120)
    (settings.root / "inbox" / "jay" / ".draft.md.swp").write_text("editor scratch")  # the watcher ignores it

    first = await backfill(settings, threads=2)
    assert (first.files, first.published, first.skipped) == (stats.files, stats.files, 0)
    records = await _raw(settings)
    assert Counter(r.path for r in records) == Counter(stats.paths)  # each file exactly once
    by_path = {r.path: r for r in records}
    for rel in stats.paths[:20]:
        assert by_path[rel].content == (settings.root / rel).read_bytes()

    again = await backfill(settings)
    assert (again.published, again.skipped) == (0, stats.files)
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0  # the watcher agrees
    assert len(await _raw(settings)) == stats.files


async def test_files_over_many_batches_and_partitions_arrive_once_in_order(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    settings = settings.model_copy(update={"kafka": settings.kafka.model_copy(update={"partitions": 3})})
    stats = generate(settings.root, 120)

    report = await backfill(settings, batch_bytes=64 * 1024)  # ~4 notes a batch: dozens of batches
    assert report.published == stats.files
    held = await _keys_by_partition(settings)
    assert Counter(k.decode() for keys in held.values() for k in keys) == Counter(stats.paths)
    for partition in range(3):  # each key where the watcher puts it, in the backfill's (sorted) order
        mine = held[partition]
        assert mine == sorted(mine) and mine
        assert {key_partitioner(k, [0, 1, 2], [0, 1, 2]) for k in mine} == {partition}
    assert (await backfill(settings)).published == 0  # every batch's files were recorded as acknowledged


async def test_folders_whose_names_sort_apart_go_in_the_sorted_order_and_progress_reaches_its_total(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    # Sending starts while the root is walked: `a/…` must still follow `a-b/…` ('-' sorts before '/').
    paths = [
        "inbox/a/b/z.md",
        "inbox/a/b-c.md",
        "inbox/a-b/y.md",
        "inbox/a.md",
        "inbox/a0/x.md",
        "living/r.md",
    ]
    paths += [f"work-queue/q/{i:03}.md" for i in range(600)] + ["work-queue/q-1.md"]  # over one chunk
    for rel in paths:
        (settings.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings.root / rel).write_text(rel)
    totals: list[tuple[int, int]] = []
    done = [0, 0]

    def progress(count: int, size: int) -> None:
        done[0], done[1] = done[0] + count, done[1] + size

    report = await backfill(settings, on_total=lambda *t: totals.append(t), progress=progress)
    assert [r.path for r in await _raw(settings)] == sorted(paths)  # one partition: the offsets' order
    assert totals == [(len(paths), sum(len(rel) for rel in paths))] == [tuple(done)]
    assert report.published == len(paths)


async def test_a_file_larger_than_a_batch_travels_in_a_batch_of_its_own(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    stats = generate(settings.root, 10)
    assert (await backfill(settings, batch_bytes=1024)).published == stats.files  # notes of 5-20 KB
    records = await _raw(settings)
    assert sorted(r.path for r in records) == sorted(stats.paths)
    assert all(r.content == (settings.root / r.path).read_bytes() for r in records)


async def test_a_rerun_sends_changed_files_only(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    stats = generate(settings.root, 30)
    await backfill(settings)
    changed, touched = settings.root / stats.paths[3], settings.root / stats.paths[4]
    changed.write_text(changed.read_text(encoding="utf-8") + "\n补充一行。\n", encoding="utf-8")
    st = touched.stat()
    os.utime(touched, (st.st_atime, st.st_mtime + 60))  # new mtime, same bytes

    report = await backfill(settings)
    assert (report.published, report.unchanged_bytes, report.skipped) == (1, 1, stats.files - 2)
    paths = [r.path for r in await _raw(settings)]
    assert paths.count(stats.paths[3]) == 2 and paths.count(stats.paths[4]) == 1
    assert (await backfill(settings)).published == 0


async def test_raw_records_go_uncompressed_unless_a_compression_is_asked_for(
    make_settings: Callable[..., Settings], kafka_data_dir: Path, tmp_path: Path
) -> None:
    plain = make_settings()
    packed = make_settings(root=tmp_path / "packed", state_dir=tmp_path / "packed-state")
    files = generate(plain.root, 20).files
    generate(packed.root, 20)
    # The broker and the worker would each decompress a zstd batch again (docs/performance.md).
    await backfill(plain)
    await backfill(packed, compression="zstd")
    assert batch_codecs(kafka_data_dir, plain.kafka.topic("raw")) == {0}
    assert batch_codecs(kafka_data_dir, packed.kafka.topic("raw")) == {ZSTD}
    assert len(await _raw(plain)) == len(await _raw(packed)) == files


def _command(settings: Settings, partitions: int = 1) -> subprocess.CompletedProcess[str]:
    """`predigest backfill` of the settings' root, in a process of its own."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_KAFKA__BOOTSTRAP": settings.kafka.bootstrap or "",
        "PREDIGEST_KAFKA__TOPIC_PREFIX": settings.kafka.topic_prefix,
        "PREDIGEST_KAFKA__PARTITIONS": str(partitions),
        "PREDIGEST_STATE_DIR": str(settings.state_dir),
    }
    predigest = [sys.executable, "-m", "streams.cli", "backfill", "--root", str(settings.root)]
    return subprocess.run(predigest, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120)


def _errors(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stderr.splitlines() if " ERROR " in line]


def test_the_command_prints_a_summary(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    settings = make_settings()
    generate(settings.root, 10)
    out = _command(settings)
    assert out.returncode == 0 and "backfill done: 15 published" in out.stderr
    out = _command(settings)
    assert out.returncode == 0
    assert "backfill done: 0 published" in out.stderr and "15 already acknowledged" in out.stderr


def _refusing_ledger(settings: Settings) -> None:
    """A ledger file whose every write DuckDB refuses: a hex digest no longer fits its column."""
    Ledger(settings.ledger_file).close()
    with duckdb.connect(str(settings.ledger_file)) as other:
        other.execute("ALTER TABLE ledger ALTER sha256 TYPE INTEGER")


@pytest.mark.parametrize("rows_a_write", [backfill_module.LEDGER_FLUSH, 4])
async def test_a_ledger_that_refuses_its_write_is_tried_once_and_ends_the_backfill(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, rows_a_write: int
) -> None:
    # Before: tried again by the last flush and by the close, each refusal chained on the last (three tries when
    # a batch's write was refused during the sending, two at its end).
    monkeypatch.setattr(backfill_module, "LEDGER_FLUSH", rows_a_write)
    settings = make_settings()
    stats = generate(settings.root, 10)
    _refusing_ledger(settings)
    with pytest.raises(LedgerWriteError) as refused:
        await backfill(settings, threads=2)
    chain: list[BaseException] = []
    at: BaseException | None = refused.value
    while at is not None:
        chain.append(at)
        at = at.__cause__ or at.__context__
    assert len([e for e in chain if isinstance(e, duckdb.Error)]) == 1, chain
    unwritten = min(rows_a_write, stats.files)  # the backfill ends at the refused write
    assert str(refused.value).startswith(f"cannot write {unwritten} acknowledgement(s) to the watcher ledger")
    assert len(await _raw(settings)) >= unwritten  # in Kafka all the same: the next start sends them again


def test_the_command_says_a_refused_ledger_in_one_line_with_what_follows(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    generate(settings.root, 10)
    _refusing_ledger(settings)
    out = _command(settings)
    errors = _errors(out)
    assert out.returncode == 2 and len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "cannot write 15 acknowledgement(s) to the watcher ledger" in errors[0]
    assert (
        "not written at this stop: the next start (of the watcher or a backfill) sends those files again"
        in (errors[0])
    )


async def _raw_topic_of_small_messages(settings: Settings) -> None:
    """The raw topic, two partitions, made before the backfill's check with a `max.message.bytes` of 50 kB."""
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(settings))
    await admin.start()
    try:
        small = {"max.message.bytes": "50000"}
        await admin.create_topics([NewTopic(settings.kafka.topic("raw"), 2, 1, topic_configs=small)])
    finally:
        await admin.close()


def _a_root_whose_last_batch_kafka_refuses(root: Path) -> None:
    """Ten small notes, then a 200 kB one in the other partition than the first note's: the small notes' batch
    is acknowledged, the large one's refused."""
    partitions = [0, 1]
    for i in range(10):
        (root / "inbox" / "jay").mkdir(parents=True, exist_ok=True)
        (root / "inbox" / "jay" / f"a{i}.md").write_text(f"# note {i}\n" + "x" * 1000, encoding="utf-8")
    first = key_partitioner(b"inbox/jay/a0.md", partitions, partitions)
    large = next(
        rel
        for rel in (f"work-queue/large{i}.md" for i in range(100))
        if key_partitioner(rel.encode(), partitions, partitions) != first
    )
    (root / large).write_text("# large\n" + "y" * 200_000, encoding="utf-8")


@pytest.mark.parametrize("ledger_refuses", [False, True])
async def test_a_kafka_failure_is_one_line_and_said_beside_a_refused_ledger_s(
    make_settings: Callable[..., Settings], ledger_refuses: bool
) -> None:
    # Before: a traceback and exit 1; behind a ledger write refused at the end, the ledger's line alone, which
    # hid why the backfill stopped.
    settings = make_settings()
    _a_root_whose_last_batch_kafka_refuses(settings.root)
    await _raw_topic_of_small_messages(settings)
    if ledger_refuses:
        _refusing_ledger(settings)
    out = _command(settings, partitions=2)
    errors = _errors(out)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(errors) == 1 + ledger_refuses, out.stderr
    assert (
        "Kafka did not take the backfill's records while finishing ([Error 10] MessageSizeTooLargeError"
        in errors[0]
    )
    assert (
        "raise it, or pass --compression zstd); 4 file(s) published before it; a re-run sends the rest"
        in errors[0]
    )
    if ledger_refuses:
        assert "cannot write 4 acknowledgement(s) to the watcher ledger" in errors[1]
    else:
        assert len(Ledger(settings.ledger_file).entries()) == 4


async def test_a_backfill_started_while_a_watcher_s_ledger_waits_to_be_opened_again_sends_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    # A refusal that invalidated DuckDB's database closed the watcher's connection until its next write (1-60 s):
    # before, DuckDB's lock went with it, and a backfill started meanwhile sent every file the watcher sent.
    settings = make_settings()
    generate(settings.root, 10)
    await kafka_io.ensure_topics(settings)  # the raw topic read below, empty
    now = [0.0]
    held = invalidated(settings.ledger_file, lambda: now[0], [("inbox/tom/x.md", 1, 1.0, "x")])
    out = _command(settings)
    errors = _errors(out)
    assert out.returncode == 2 and len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert (
        f"lock file {settings.ledger_file}.lock is held by another process (PID {os.getpid()})" in errors[0]
    )
    assert await raw_paths(settings) == []
    held.close()
    assert _command(settings).returncode == 0  # once the watcher let go
    assert len(await raw_paths(settings)) == 15


async def test_links_and_special_files_are_refused_as_the_watcher_refuses_them(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("export OPENAI_API_KEY=sk-backfill\n", encoding="utf-8")
    jay = settings.root / "inbox" / "jay"
    jay.mkdir(parents=True)
    (jay / "2026-09-27-note.md").write_text("# vLLM 推理\n", encoding="utf-8")
    os.symlink(outside / "secret.md", jay / "2026-09-27-leak.md")
    os.symlink(jay / "2026-09-27-note.md", jay / "2026-09-27-alias.md")
    os.symlink(outside, settings.root / "paper_cards" / "elsewhere")  # a symlinked folder: not entered
    os.mkfifo(jay / "2026-09-27-pipe.md")  # reading it would block the backfill

    report = await backfill(settings)
    assert (report.files, report.published, report.refused) == (5, 1, 4)
    by_path = {r.path: r for r in await _raw(settings)}
    assert sorted(by_path) == [
        "inbox/jay/2026-09-27-alias.md",
        "inbox/jay/2026-09-27-leak.md",
        "inbox/jay/2026-09-27-note.md",
        "inbox/jay/2026-09-27-pipe.md",
        "paper_cards/elsewhere",
    ]
    for rel in ("inbox/jay/2026-09-27-leak.md", "inbox/jay/2026-09-27-alias.md", "paper_cards/elsewhere"):
        assert by_path[rel].content == b"" and "is a symlink" in (by_path[rel].refused or ""), rel
    assert "not a regular file" in (by_path["inbox/jay/2026-09-27-pipe.md"].refused or "")
    assert not any(b"sk-backfill" in r.content for r in by_path.values())
    # The watcher finds the refusals in the shared ledger: it sends none of them again.
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0
    assert (await backfill(settings)).published == 0


async def test_a_folder_swapped_for_a_symlink_out_sends_nothing_of_the_outside_file(
    make_settings: Callable[..., Settings], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A note's folder replaced by a link to outside: its refusal went out with the outside file's size and time.
    settings = make_settings()
    caplog.set_level(logging.INFO)
    (settings.root / "inbox/tom").mkdir()
    (settings.root / "inbox/tom/2026-12-07-x.md").write_text("# inside\n", encoding="utf-8")
    assert (await backfill(settings)).published == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "2026-12-07-x.md").write_bytes(b"s" * 7777)
    os.utime(elsewhere / "2026-12-07-x.md", (1_111_111_111, 1_111_111_111))
    os.rename(settings.root / "inbox/tom", tmp_path / "tom.old")
    os.symlink(elsewhere, settings.root / "inbox/tom")
    # The link, and the note now under it.
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 2
    link = os.lstat(settings.root / "inbox/tom")
    by_path = {r.path: r for r in (await _raw(settings))[1:]}
    assert {rel: r.refused_code for rel, r in by_path.items()} == {
        "inbox/tom": "symlink",
        "inbox/tom/2026-12-07-x.md": "outside",
    }
    assert {(r.size, r.mtime) for r in by_path.values()} == {(link.st_size, link.st_mtime)}  # the link's own
    ledger = Ledger(settings.ledger_file)
    try:
        assert {row[:2] for rel, row in ledger.known().items() if rel.startswith("inbox/tom/")} == {
            (link.st_size, link.st_mtime)
        }
    finally:
        ledger.close()
    assert "7777" not in caplog.text and "1111111111" not in caplog.text
    # Sent once: neither the watcher's next scan nor a backfill sends it again.
    assert await publish_root(settings, follow=False, stop=asyncio.Event()) == 0
    assert (await backfill(settings)).published == 0


def test_a_slice_that_fails_midway_leaves_no_folder_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The slice's folder is held open across its files; a traceback kept by the caller must not keep it open.
    folder = tmp_path / "inbox" / "jay"
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"2026-09-27-100{i}-n{i}.md").write_text(f"# note {i}\n")
    entries = list(backfill_todo.walk(tmp_path))
    real = backfill_module._prepare

    def fails_second(
        c: root_files.Entry, read: root_files.FileOutcome, known: str | None
    ) -> backfill_module.Prepared:
        if c.rel.endswith("n1.md"):
            raise RuntimeError("a bug")
        return real(c, read, known)

    monkeypatch.setattr(backfill_module, "_prepare", fails_second)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(RuntimeError) as failed:
        backfill_module._prepare_many(tmp_path, entries, 1 << 20, {})
    assert failed.traceback and len(os.listdir("/proc/self/fd")) == before
