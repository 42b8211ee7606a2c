"""Every kind of bad input through the real watcher, Kafka and worker: each gets its log line, its metric and its
row (`rejected`, or a warning on the source), and nothing else is lost."""

from __future__ import annotations

import asyncio
import codecs
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal
from uuid import uuid4
from zoneinfo import ZoneInfo

import pytest

from processors.fan_out import DocumentEvent
from processors.models import Briefing, RawFile
from processors.raw_record import read_raw
from processors.wire import decode_rows
from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import DEFAULT_AXES, KafkaSettings, Settings
from streams.worker_process import free_port, stop_process
from tests.conftest import KAFKA_CACHE
from tests.state_support import to_event
from tests.streams.fault_support import (
    metric,
    printed_logs_on_failure,
    spawn_watcher,
    watcher_metrics,
    worker_metrics,
)
from tests.support import read_topic, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SH = ZoneInfo("Asia/Shanghai")
STAMP = (datetime.now(SH) - timedelta(hours=1)).strftime("%Y-%m-%d-%H%M")
BIG = 4 * 1024 * 1024 - 4096  # just under the default limit: must pass through every topic whole
BIG_PATH = f"inbox/spark/{STAMP}-big-security-note.md"
LINE = "vLLM 推理 serving: KV cache hit rate 92.2% with speculative decoding.\n"
# On the risk axis, so that the inference briefing below is not slowed by 4 MiB of text.
BIG_TEXT = ("# big security note\n" + "attack surface of the gateway, security review.\n" * BIG)[:BIG]


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    outcome: Literal["rejected", "warned", "stored"]
    label: str | None  # of predigest_documents_rejected_total / _warned_total
    phrase: str  # in the `rejected` reason or the source's warning
    counted_by: Literal["watcher", "worker"] = "worker"


CASES = [
    Case("binary", f"inbox/jay/{STAMP}-binary.md", "rejected", "binary", "NUL bytes"),
    Case("oversized", f"inbox/jay/{STAMP}-huge.md", "rejected", "limit", "over the limit"),
    Case("not-utf8", f"inbox/tom/{STAMP}-gb18030.md", "warned", "decode", "decoded as GB18030"),
    Case("undecodable", f"inbox/tom/{STAMP}-latin1.md", "warned", "decode", "undecodable bytes replaced"),
    Case("symlink-out", f"inbox/jay/{STAMP}-leak.md", "rejected", "symlink", "is a symlink", "watcher"),
    Case("symlink-in", f"inbox/jay/{STAMP}-alias.md", "rejected", "symlink", "is a symlink", "watcher"),
    Case("fifo", f"inbox/jay/{STAMP}-pipe.md", "rejected", "special", "not a regular file", "watcher"),
    # Names that are not UTF-8, shown escaped; a plain backslashreplace would give the two one name.
    Case(
        "bad-name", f"inbox/jay/{STAMP}-\\xff\\xfe.md", "rejected", "bad_name", "not valid UTF-8", "watcher"
    ),
    Case(
        "bad-name-twin", f"inbox/jay/{STAMP}-\\\\xff\\xfe.md", "rejected", "bad_name", "rename it", "watcher"
    ),
    Case("yaml-malformed", f"inbox/spark/{STAMP}-malformed.md", "warned", "front_matter", "not valid YAML"),
    Case("yaml-python-tag", f"inbox/spark/{STAMP}-pytag.md", "warned", "front_matter", "not valid YAML"),
    Case("yaml-billion-laughs", f"inbox/spark/{STAMP}-laughs.md", "warned", "front_matter", "expands past"),
    Case(
        "yaml-over-64kib", f"inbox/spark/{STAMP}-long-front.md", "warned", "front_matter", "over the limit of"
    ),
    Case("yaml-alias-bomb", f"inbox/spark/{STAMP}-aliases.md", "warned", "front_matter", "expands past"),
    Case("utf16-bom", f"inbox/tom/{STAMP}-utf16.md", "stored", None, ""),
    Case("backtracking-runs", f"inbox/jay/{STAMP}-runs.md", "stored", None, ""),
    Case("empty", f"inbox/jay/{STAMP}-empty.md", "rejected", "empty", "file is empty"),
    Case("no-stamp", "inbox/tom/notes-without-stamp.md", "warned", "no_stamp", "no date stamp"),
    Case("bad-arxiv-id", f"inbox/tom/{STAMP}-bad-id.md", "warned", "arxiv_id", "'2613.12345' is written as"),
    Case("ten-thousand-lines", f"inbox/spark/{STAMP}-long.md", "stored", None, ""),
    Case("renamed-folder", f"inbox/flyp-archive/{STAMP}-moved.md", "stored", None, ""),
    Case("plain-note", f"inbox/jay/{STAMP}-plain.md", "stored", None, ""),
]
BY_ID = {c.id: c for c in CASES}


def same_label(case: Case) -> int:
    """How many cases the metric of this one counts (symlink, decode and front_matter have several)."""
    return sum(
        (c.outcome, c.label, c.counted_by) == (case.outcome, case.label, case.counted_by) for c in CASES
    )


MOVED_FROM = f"inbox/flyp/{STAMP}-moved.md"


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def make_files(root: Path, outside: Path) -> None:
    write(root, BY_ID["binary"].path, b"# vLLM\x00\x01\x02 binary\n")
    with (root / BY_ID["oversized"].path).open("wb") as fh:
        fh.truncate(5 * 1024 * 1024)  # sparse: 5 MiB without writing them
    write(root, BY_ID["not-utf8"].path, "# vLLM 推理笔记\nKV cache 命中率 92.2%\n".encode("gb18030"))
    write(root, BY_ID["undecodable"].path, b"# vLLM caf\xe9 \x81\xff serving\n")
    write(outside, "secret.md", "# vLLM secret\n")
    os.symlink(outside / "secret.md", root / BY_ID["symlink-out"].path)
    os.symlink(root / BY_ID["plain-note"].path, root / BY_ID["symlink-in"].path)
    os.mkfifo(root / BY_ID["fifo"].path)
    for name in (b"\xff\xfe", b"\\xff\xfe"):
        path = os.fsencode(root) + f"/inbox/jay/{STAMP}-".encode() + name + b".md"
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY))
    write(root, BY_ID["yaml-malformed"].path, "---\ntitle: [unclosed\n---\n# vLLM 推理 malformed\nbody\n")
    write(
        root,
        BY_ID["yaml-python-tag"].path,
        "---\nx: !!python/object/apply:os.system ['true']\n---\n# vLLM 推理\n",
    )
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)
    ]
    write(
        root, BY_ID["yaml-billion-laughs"].path, "---\n" + "\n".join(laughs) + "\n---\n# vLLM 推理 laughs\n"
    )
    long_front = "---\ntags:\n" + "- tag\n" * 12_000 + "---\n# vLLM 推理 long front matter\n"
    write(root, BY_ID["yaml-over-64kib"].path, long_front)
    aliases = f"---\nbig: &b {'a' * 8192}\nrefs: [{', '.join(['*b'] * 3000)}]\n---\n# vLLM 推理 aliases\n"
    write(root, BY_ID["yaml-alias-bomb"].path, aliases)
    write(
        root,
        BY_ID["utf16-bom"].path,
        codecs.BOM_UTF16_LE + "# vLLM 推理 UTF-16\nKV cache.\n".encode("utf-16-le"),
    )
    runs = (  # white space, brackets and hyphens that regexes once backtracked over (500 spaces: 93 s)
        "# vLLM 推理 runs\nName"
        + " " * 200_000
        + "(arXiv 2501.00001)\n\narxiv"
        + " " * 200_000
        + "x\n\n"
        + "(" * 100_000
        + ")x 2501.00002\n\n"
        + "-a" * 50_000
        + " 1.2.3\n"
    )
    write(root, BY_ID["backtracking-runs"].path, runs)
    write(root, BY_ID["empty"].path, b"")
    write(root, BY_ID["no-stamp"].path, "# vLLM 推理 without a stamp\n")
    write(root, BY_ID["bad-arxiv-id"].path, "# vLLM 推理\nsee arXiv:2613.12345 and arXiv:2609.23130\n")
    write(
        root,
        BY_ID["ten-thousand-lines"].path,
        "# 万行笔记\n" + "".join(f"{i}: {LINE}" for i in range(10_000)),
    )
    write(root, BIG_PATH, BIG_TEXT)
    write(root, MOVED_FROM, "# vLLM 推理 in a folder that will be renamed\n")
    write(root, BY_ID["plain-note"].path, "# vLLM 推理 an ordinary note\nKV cache serving.\n")


@dataclass
class Outcome:
    briefing: Briefing
    raw: dict[str, list[RawFile]]
    documents: list[DocumentEvent]
    watcher: dict[str, float]
    worker: dict[str, float]
    logs: str


def _counts(url: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind in ("rejected", "warned"):
        for label in {c.label for c in CASES if c.label} | {"vanished", "outside"}:
            out[f"{kind}:{label}"] = metric(url, f"predigest_documents_{kind}_total", reason=label) or 0.0
    return out


async def _run(s: Settings, workdir: Path) -> Outcome:
    await kafka_io.ensure_topics(s)
    make_files(s.root, workdir / "outside")
    logs = (workdir / "watcher.log", workdir / "worker.log")
    with running_worker(s, workdir), printed_logs_on_failure(*logs):
        watcher = spawn_watcher(s, workdir)
        try:

            async def published() -> dict[str, list[RawFile]]:
                found: dict[str, list[RawFile]] = {}
                for _, v in await read_topic(s, "raw"):
                    raw = read_raw(v)
                    found.setdefault(raw.path, []).append(raw)
                return found

            async def until(check: Callable[[dict[str, list[RawFile]]], bool], what: str) -> None:
                deadline = time.monotonic() + 60
                while not check(await published()):
                    assert time.monotonic() < deadline, f"timed out waiting for {what}"
                    await asyncio.sleep(0.5)

            wanted = {c.path for c in CASES} - {BY_ID["renamed-folder"].path} | {MOVED_FROM, BIG_PATH}
            await until(lambda r: wanted <= set(r), "every file to be published")
            (s.root / "inbox/flyp").rename(s.root / "inbox/flyp-archive")  # under the running watcher
            await until(
                lambda r: BY_ID["renamed-folder"].path in r and any(x.deleted for x in r.get(MOVED_FROM, [])),
                "the renamed folder",
            )
            await wait_ingested(s, 90)
            end = datetime.now(UTC) + timedelta(minutes=1)  # rejections are dated when the worker saw them
            await send_command(s, "inference", "flush", end)
            briefing = await await_briefing(s, "inference", end, "flush", 90)
            counts = (_counts(watcher_metrics(s)), _counts(worker_metrics(s)))
        finally:
            stop_process(watcher)
    documents = [to_event(row) for _, v in await read_topic(s, "documents") for row in decode_rows(v)]
    text = "".join(p.read_text(errors="replace") for p in logs)
    return Outcome(briefing, await published(), documents, *counts, text)


@pytest.fixture(scope="module")
def outcome(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    """One run of the whole pipeline over every case; each parameter below checks its own."""
    workdir = tmp_path_factory.mktemp("bad-input")
    run = uuid4().hex[:10]
    for top in ("inbox", "paper_cards", "work-queue", "living"):
        (workdir / "root" / top).mkdir(parents=True)
    s = Settings(
        root=workdir / "root",
        state_dir=workdir / "state",
        out_dir=workdir / "out",
        app_id=f"t{run}",
        kafka=KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=f"t{run}"),
        web_port=free_port(),
        watcher_metrics_port=free_port(),
        close_enabled=False,
        quiet_seconds=0.5,
        rescan_seconds=5.0,
        kafka_cache=KAFKA_CACHE,
    )
    yield asyncio.run(_run(s, workdir))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(outcome: Outcome, case: Case) -> None:
    b = outcome.briefing
    rejected = {r.path: r.reason for r in b.rejected}
    sources = {s.path: s for s in b.sources if s.status != "superseded"}
    assert case.path in outcome.raw, "it travelled through Kafka"
    assert case.path in outcome.logs, "a log line names it"
    if case.outcome == "rejected":
        assert case.phrase in rejected[case.path]
        assert case.path not in sources
        counts = outcome.watcher if case.counted_by == "watcher" else outcome.worker
        assert counts[f"rejected:{case.label}"] == same_label(case)  # once per file, by one process
        assert all(r.content == b"" for r in outcome.raw[case.path]) or case.id in ("binary", "empty")
    elif case.outcome == "warned":
        assert any(case.phrase in w for w in sources[case.path].warnings), sources[case.path].warnings
        assert case.path not in rejected
        assert outcome.worker[f"warned:{case.label}"] == same_label(case)
    else:
        assert case.path in sources and case.path not in rejected
        assert sources[case.path].warnings == ()


def test_the_oversized_file_travelled_without_its_bytes_and_one_just_under_the_limit_whole(
    outcome: Outcome,
) -> None:
    [huge] = outcome.raw[BY_ID["oversized"].path]
    assert (huge.content, huge.size) == (b"", 5 * 1024 * 1024)
    [raw] = outcome.raw[BIG_PATH]
    assert len(raw.content) == BIG
    # Its parsed document (~5.5 MiB as a v2 documents record) passed the documents topic too.
    # It goes to every axis, as every note does: one record per axis, each whole.
    events = [e for e in outcome.documents if e.path == BIG_PATH]
    assert sorted(e.axis or "" for e in events) == sorted(a.name for a in DEFAULT_AXES)
    assert all(e.document is not None and e.document.text == BIG_TEXT for e in events)
    # Stored: the briefing lists it (a log line per axis only when its batch was small, store_report).
    assert BIG_PATH in {s.path for s in outcome.briefing.sources}


def test_the_renamed_folder_left_no_trace_under_its_old_name(outcome: Outcome) -> None:
    assert MOVED_FROM not in {s.path for s in outcome.briefing.sources}
    assert f"published deletion of {MOVED_FROM}" in outcome.logs


def test_no_refused_bytes_leaked_into_kafka_or_the_briefing(outcome: Outcome) -> None:
    everything = b"".join(r.content for rs in outcome.raw.values() for r in rs)
    assert b"secret" not in everything
    assert "secret" not in outcome.briefing.model_dump_json()
