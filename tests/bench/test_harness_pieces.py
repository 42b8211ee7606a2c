"""The benchmark's generator and measuring pieces, without Kafka: `make bench` itself is not part of `make test`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bench import archive, latency, procs, run, stages
from processors.documents import parse_document
from processors.models import RawFile
from processors.near_duplicates import similarity

# Slower than a unit test by design (many cases, worst-case inputs, or processes): its own bound.
pytestmark = pytest.mark.timeout(120)

SH = ZoneInfo("Asia/Shanghai")


def _doc(root: Path, rel: str):
    data = (root / rel).read_bytes()
    raw = RawFile(path=rel, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    return parse_document(raw, zone=SH)


def test_the_archive_is_seeded_realistic_and_a_prefix_of_a_larger_one(tmp_path: Path) -> None:
    stats = archive.generate(tmp_path / "a", 80)
    again = archive.generate(tmp_path / "b", 80)
    assert stats.paths == again.paths
    assert all((tmp_path / "a" / r).read_bytes() == (tmp_path / "b" / r).read_bytes() for r in stats.paths)
    assert stats.files == 85 and stats.exact + stats.near > 0 and stats.cards > 0
    assert 0.3 < stats.zh_share < 0.7
    notes = stats.paths[: stats.notes]
    writers = {r.split("/")[1] for r in notes if r.startswith("inbox/")}
    assert writers <= set(archive.WRITERS) and len(writers) == 5
    sizes = [(tmp_path / "a" / r).stat().st_size for r in notes]
    assert min(sizes) >= archive.MIN_BYTES and max(sizes) <= archive.MAX_BYTES
    docs = [_doc(tmp_path / "a", r) for r in notes]
    assert all(d.event_time.tzinfo and d.arxiv_ids for d in docs)
    assert {p.id for p in archive.papers()} >= {
        i for d in docs for i in d.arxiv_ids
    }  # ids recur from the pool
    small = archive.generate(tmp_path / "c", 30)
    assert small.paths[:30] == stats.paths[:30]
    archive.link_prefix(tmp_path / "a", stats, tmp_path / "d", 30)
    assert sorted(p.relative_to(tmp_path / "d").as_posix() for p in (tmp_path / "d").rglob("*.md")) == sorted(
        small.paths
    )


def test_duplicates_are_exact_copies_or_near_ones_above_the_threshold() -> None:
    gen = archive.Generator()
    notes = [gen.note(i) for i in range(200)]
    contents = {rel: content for rel, content, _ in notes}
    exact = [c for _, c, k in notes if k == "exact"]
    near = [c for _, c, k in notes if k == "near"]
    assert exact and near
    assert all(sum(c == other for other in contents.values()) >= 2 for c in exact)

    def sig(text: str) -> tuple[int, ...]:
        raw = RawFile(path="inbox/jay/x.md", content=text.encode(), size=1, mtime=0.0, sha256="s")
        return parse_document(raw, zone=SH).signature

    others = [sig(c) for _, c, k in notes if k == "fresh"]
    assert all(max(similarity(sig(c), o) for o in others) >= 0.8 for c in near[:5])


def test_worker_log_lines_give_the_stored_time(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text(
        "2026-12-03 06:09:15,250 INFO faust.worker: [^Worker]: Ready\n"
        "2026-12-03 06:09:17,125 INFO streams.pipeline: stored inbox/jay/a.md for axis inference\n"
        "2026-12-03 06:09:17,500 INFO streams.pipeline: stored inbox/jay/a.md for axis risk\n"
    )
    found = latency.stored_times(log)
    assert list(found) == ["inbox/jay/a.md"]
    assert round(found["inbox/jay/a.md"] % 60, 3) == 17.125
    got = latency.percentiles([0.1] * 98 + [1.0, 2.0])
    assert (got["p50"], got["max"]) == (100, 2000) and 1000 <= got["p99"] < 1100


def test_the_latency_root_has_every_folder_its_notes_go_to_before_the_first(tmp_path: Path) -> None:
    # A note renamed into a folder made a moment before waits the quiet period: the light-load p99 was that.
    latency.prepare_root(tmp_path)
    gen = archive.Generator(4242)
    folders = {(tmp_path / gen.note(i)[0]).parent for i in range(600)}
    assert len(folders) == 6 and all(folder.is_dir() for folder in folders)


def test_process_figures_come_from_proc() -> None:
    assert procs.peak_rss_mib(os.getpid()) > 10
    assert procs.peak_rss_mib(2**22 + 7) == 0.0  # no such process
    assert stages.growth_exponent({"100": 1.0, "200": 2.0, "400": 4.0}) == 1.0


def test_the_in_process_stages_measure_the_compiled_and_the_python_pass(tmp_path: Path) -> None:
    # `make bench` measures these before any ingest: a pass the bench cannot run stops it with no figure at all.
    stats = archive.generate(tmp_path, 6)
    got = stages.measure(tmp_path, stats.paths[:6])
    assert got["parse"] > 0 and got["parse_python"] > 0 and got["event_v3_encode"] > 0


def test_a_bench_asked_to_rewrite_a_missing_page_refuses_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["bench.run", "--page", str(tmp_path / "missing.md")])
    with pytest.raises(SystemExit):
        run.main()
    assert "missing.md: no such file" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing measured, nothing written
