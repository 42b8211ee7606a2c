"""`predigest explain PATH`: the latest briefing's own words about one note, read back, never recomputed."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from processors.briefing_names import briefing_basename
from processors.models import Briefing, Rejection
from sinks.files import BriefingFiles
from tests.processors.notes import END, SH, brief, example_documents, note
from tests.streams.cli_support import predigest

REPOST = "inbox/jay/2026-09-27-1700-csdn-inference-engineering-repost.md"
ORIGINAL = "inbox/jay/2026-09-27-1620-csdn-inference-engineering-llmops-speculative-decoding-sep27.md"

# Two briefings assembled in process and the real command run against them.
pytestmark = pytest.mark.timeout(120)


def written(out: Path, briefing: Briefing) -> None:
    name = briefing_basename(briefing.axis, briefing.window.end, briefing.trigger, SH)
    BriefingFiles(out).ensure(briefing.axis, name, briefing.model_dump_json(by_alias=True), "# E1\n")


def explain(out: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = predigest("explain", *args, "--json", env={"PREDIGEST_OUT_DIR": str(out)})
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


def test_explain_says_what_the_latest_briefing_said(tmp_path: Path) -> None:
    out = tmp_path / "out"
    docs = example_documents()
    briefing = brief(docs)
    written(out, brief(docs[:3], end=END - timedelta(days=1)))  # an older briefing of the axis
    written(out, briefing)
    sources = {s.path: s for s in briefing.sources}

    code, said = explain(out, REPOST, "--axis", "inference")
    assert code == 0 and said["path"] == REPOST
    (axis,) = said["axes"]
    assert axis["briefing"].endswith("2026-09-27-inference-e1prep.json")
    assert axis["relevance"]["score"] == sources[REPOST].relevance.score
    assert axis["terms"] == list(sources[REPOST].relevance.terms) and axis["terms"]
    assert axis["duplicate_of"]["path"] == ORIGINAL and axis["duplicate_of"]["kind"] == "near"
    assert axis["no_increment"]["code"] == "duplicate"

    used = next(s.path for s in briefing.sources if s.status == "used")
    code, said = explain(out, str(Path("examples/root") / used), "--axis", "inference")
    (axis,) = said["axes"]
    ranks = [i.rank for i in briefing.increments if any(s.split("#")[0] == used for s in i.sources)]
    assert [i["rank"] for i in axis["increments"]] == ranks and ranks
    assert "no_increment" not in axis


def test_a_note_whose_name_holds_a_hash_is_explained_with_its_increments(tmp_path: Path) -> None:
    # Its increments' `path#section` were cut at the name's own `#`: none matched, and none was said.
    out = tmp_path / "out"
    path = "inbox/jay/2026-09-27-2100-C#-serving.md"
    text = (
        "# C# serving\n\n## C# bindings\n\nvLLM KV cache serving arXiv:2609.23130 throughput 3.8× on H100\n"
    )
    briefing = brief([*example_documents(), note(path, text)])
    written(out, briefing)
    code, said = explain(out, path, "--axis", "inference")
    (axis,) = said["axes"]
    ranks = [i.rank for i in briefing.increments if f"{path}#C# bindings" in i.sources]
    assert code == 0 and ranks and [i["rank"] for i in axis["increments"]] == ranks
    assert axis["increments"][0]["from"] == [f"{path}#C# bindings"]


def test_a_note_is_not_explained_with_the_increments_of_a_note_whose_name_it_prefixes(tmp_path: Path) -> None:
    # `a.md#b.md#§…` starts with `a.md#`: `a.md` was said to have given the other note's increments too.
    out = tmp_path / "out"
    short, long = "inbox/jay/kv.md", "inbox/jay/kv.md#C#-serving.md"
    texts = {
        short: "# KV offload\n\n## Offload\n\nKV cache offload to CPU arXiv:2609.23131 cuts TTFT 2.1× on H100\n",
        long: "# C# serving\n\n## C# bindings\n\nvLLM KV cache serving arXiv:2609.23130 throughput 3.8× on H100\n",
    }
    briefing = brief([*example_documents(), *(note(p, t) for p, t in texts.items())])
    written(out, briefing)
    code, said = explain(out, short, "--axis", "inference")
    (axis,) = said["axes"]
    theirs = [i.rank for i in briefing.increments if f"{long}#C# bindings" in i.sources]
    assert code == 0 and theirs
    assert not {i["rank"] for i in axis.get("increments", [])} & set(theirs)


def test_a_note_no_briefing_lists_answers_1_and_an_unknown_axis_2(tmp_path: Path) -> None:
    out = tmp_path / "out"
    written(out, brief(example_documents()))
    code, said = explain(out, "inbox/jay/never-written.md")
    assert code == 1 and all(a["briefing"] is None for a in said["axes"])
    assert [a["axis"] for a in said["axes"]] == ["inference", "llm-infra", "risk", "llm-application"]
    done = predigest("explain", REPOST, "--axis", "nope", env={"PREDIGEST_OUT_DIR": str(out)})
    assert done.returncode == 2 and "axis 'nope' is not configured" in done.stderr


def test_the_text_answer_is_in_the_briefings_words(tmp_path: Path) -> None:
    out = tmp_path / "out"
    briefing = brief(example_documents())
    written(out, briefing)
    done = predigest("explain", REPOST, "--axis", "inference", env={"PREDIGEST_OUT_DIR": str(out)})
    reason = next(n.reason for n in briefing.no_increment_sources if n.path == REPOST)
    assert done.returncode == 0
    assert f"no increment  {reason} (duplicate)" in done.stdout
    assert f"duplicate  of {ORIGINAL} (near, similarity" in done.stdout


def test_a_rejected_or_damaged_note_is_explained_by_its_rejection(tmp_path: Path) -> None:
    # Not "no briefing lists it": a note turned away at the door, or whose stored text did not read back, is listed
    # among the briefing's rejected, and that is what explain says.
    out = tmp_path / "out"
    bad = "inbox/jay/2026-09-27-0900-binary.md"
    reason = f"{bad}: file contains NUL bytes; binary files are not notes"  # as the worker stores it
    briefing = brief(example_documents())
    written(
        out,
        briefing.model_copy(update={"rejected": [Rejection(path=bad, reason=reason, reason_code="binary")]}),
    )
    code, said = explain(out, bad, "--axis", "inference")
    (axis,) = said["axes"]
    assert code == 0 and axis["rejected"] == {"code": "binary", "reason": reason}
    done = predigest("explain", bad, "--axis", "inference", env={"PREDIGEST_OUT_DIR": str(out)})
    # The reason without the path the output's first line names already; --json keeps it as stored.
    line = "rejected   file contains NUL bytes; binary files are not notes (binary)"
    assert done.returncode == 0 and line in done.stdout


def test_a_note_listed_by_a_flush_and_damaged_by_the_close_is_explained_by_the_close_s_rejection(
    tmp_path: Path,
) -> None:
    # The close lists the note among its rejected only (its stored text does not read back since the flush): that
    # is the answer, not the flush's listing of it as a source; a note the flush rejected and the close lists is a
    # source.
    out = tmp_path / "out"
    docs = example_documents()
    reason = "its stored text cannot be read (a note's stored body that is not UTF-8)"
    damaged = Rejection(path=ORIGINAL, reason=reason, reason_code="damaged")
    flush = [d for d in docs if d.path != REPOST]
    written(out, brief(flush, trigger="flush", rejected=[damaged.model_copy(update={"path": REPOST})]))
    close = brief([d for d in docs if d.path != ORIGINAL], rejected=[damaged])
    written(out, close.model_copy(update={"generated_at": END + timedelta(hours=1)}))
    code, said = explain(out, ORIGINAL, "--axis", "inference")
    (axis,) = said["axes"]
    assert code == 0 and axis["rejected"] == {"code": "damaged", "reason": reason}
    assert axis["trigger"] == "close"
    code, said = explain(out, REPOST, "--axis", "inference")
    assert code == 0 and said["axes"][0]["status"] == "used" and "rejected" not in said["axes"][0]


def test_a_briefing_of_an_earlier_release_listing_a_damaged_note_as_a_source_too_answers_by_its_source(
    tmp_path: Path,
) -> None:
    # Before a damaged note was listed among the rejected only, a briefing listed it as a source as well: the tie
    # (one briefing) goes to its source entry, which says its text did not read back.
    out = tmp_path / "out"
    reason = "its stored text cannot be read (a note's stored body that is not UTF-8)"
    older = brief(example_documents())
    damaged = Rejection(path=ORIGINAL, reason=reason, reason_code="damaged")
    written(out, older.model_copy(update={"rejected": [damaged]}))
    code, said = explain(out, ORIGINAL, "--axis", "inference")
    (axis,) = said["axes"]
    assert code == 0 and axis["unreadable"] == reason and "rejected" not in axis and "status" in axis
    done = predigest("explain", ORIGINAL, "--axis", "inference", env={"PREDIGEST_OUT_DIR": str(out)})
    assert f"unreadable {reason} (damaged: left out of the briefing)" in done.stdout


def test_a_note_refused_after_it_was_briefed_is_explained_by_its_refusal(tmp_path: Path) -> None:
    # A briefing lists a note whose file is refused since (a symlink now) among its rejected only: that is the
    # answer, not the earlier briefing's source entry. A briefing written before 2026-12-07 listed both ways: its
    # source entry answers, and says it was listed as rejected too.
    out = tmp_path / "out"
    docs = example_documents()
    reason = "it is a symlink (never followed)"
    refused = Rejection(path=ORIGINAL, reason=reason, reason_code="symlink")
    written(out, brief(docs, trigger="flush").model_copy(update={"rejected": [refused]}))
    code, said = explain(out, ORIGINAL, "--axis", "inference")
    (axis,) = said["axes"]
    assert code == 0 and axis["also_rejected"] == {"code": "symlink", "reason": reason} and "status" in axis
    done = predigest("explain", ORIGINAL, "--axis", "inference", env={"PREDIGEST_OUT_DIR": str(out)})
    # A state migrated from schema 8 keeps listing both until the path's next record: not "the next one" then.
    assert (
        f"also rejected  {reason} (symlink): a briefing before 2026-12-07, or of a state migrated from then until "
        "the file's next change, listed both" in done.stdout
    )

    close = brief([d for d in docs if d.path != ORIGINAL], rejected=[refused])
    written(out, close.model_copy(update={"generated_at": END + timedelta(hours=1)}))
    code, said = explain(out, ORIGINAL, "--axis", "inference")
    (axis,) = said["axes"]
    assert (
        code == 0 and axis["rejected"] == {"code": "symlink", "reason": reason} and axis["trigger"] == "close"
    )
