"""`predigest status` without workers: merging their answers and the table an operator reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streams.settings import KafkaSettings, Settings
from streams.status_table import fetch, merge, render
from streams.worker_process import free_port

ANSWER: dict[str, Any] = {
    "worker": "http://127.0.0.1:6066",
    "owned_partitions": [0, 1],
    "axis_partitions": {"inference": 0, "llm-infra": 0, "risk": 2, "llm-application": 3},
    "axes": [
        {
            "axis": "inference",
            "partition": 0,
            "ready": True,
            "window": {"start": "2026-09-26T14:20:00+00:00", "end": "2026-09-27T14:20:00+00:00"},
            "documents": 12,
            "duplicates": {"exact": 1, "near": 2},
            "last_briefing": {
                "window_end": "2026-09-27T14:20:00+00:00",
                "trigger": "close",
                "generated_at": "2026-09-27T14:25:00+00:00",
                "sources": 14,
                "increments": 5,
            },
            "refused": {
                "count": 3,
                "newest": {
                    "path": "inbox/jay/2026-09-27-0900-link.md",
                    "reason_code": "symlink",
                    "reason": "it is a symlink (never followed)",
                    "seen_at": "2026-09-27T14:10:00+00:00",
                },
            },
            "lag": {"documents": 0, "control": 1},
        },
        {
            "axis": "llm-infra",
            "partition": 0,
            "ready": False,
            "window": {"start": "2026-09-26T14:20:00+00:00", "end": "2026-09-27T14:20:00+00:00"},
            "documents": 0,
            "duplicates": {"exact": 0, "near": 0},
            "last_briefing": None,
            "lag": None,
        },
    ],
    "lag": {"ok": True, "checked_at": "2026-09-27T14:29:58+00:00", "parse": 40, "raw": {"0": 40}},
}


def _settings(tmp_path: Path) -> Settings:
    return Settings(root=tmp_path, state_dir=tmp_path / "state", kafka=KafkaSettings())


def test_the_table_has_a_row_per_axis_and_names_who_is_missing(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    down = {"worker": "http://127.0.0.1:6068", "error": "connection refused"}
    report = merge(s, [ANSWER, down])
    assert [row["axis"] for row in report["axes"]] == [a.name for a in s.axes]
    text = render(report, s.tz, "en")
    lines = text.splitlines()
    header = ["AXIS", "PART", "WORKER", "WINDOW", "DOCS", "DUPS", "REFUSED", "LAST", "BRIEFING", "LAG"]
    assert lines[0].split() == header
    inference = next(line for line in lines if line.startswith("inference"))
    assert "09-26 22:20 → 09-27 22:20" in inference  # shown in the configured zone
    cells = dict(zip(re.split(r"\s{2,}", lines[0]), re.split(r"\s{2,}", inference), strict=True))
    assert (cells["DOCS"], cells["DUPS"]) == ("12", "1+2") and "2026-09-27 22:20 close" in inference
    assert cells["REFUSED"] == "3 (newest: a symlink, 09-27 22:10)"
    # A worker of the release before says nothing of refusals: nothing is made up for it.
    infra = next(line for line in lines if line.startswith("llm-infra"))
    assert dict(zip(re.split(r"\s{2,}", lines[0]), re.split(r"\s{2,}", infra), strict=True))["REFUSED"] == "-"
    assert "docs 0 / ctl 1" in inference
    assert "unknown (catching up)" in next(line for line in lines if line.startswith("llm-infra"))
    risk = next(line for line in lines if line.startswith("risk"))
    assert risk.split()[1] == "2" and "no worker answered for it" in risk
    assert "worker http://127.0.0.1:6068 did not answer: connection refused" in text
    # The parse (raw-topic) lag is the group's, from the worker's last lag probe (the gauges' reading).
    assert "parse lag: 40 raw record(s) not parsed yet (as of 22:29:58" in text


def test_an_axis_whose_briefings_cannot_be_written_is_named_under_the_table(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    failing = {
        "risk": {
            "reason": "no_space",
            "error": "[Errno 28] No space left on device",
            "since": "2026-09-27T14:20:00+00:00",
            "attempts": 3,
            "pending": 2,
            "next_attempt_in_seconds": 19.6,
        }
    }
    text = render(merge(s, [{**ANSWER, "briefing_failures": failing}]), s.tz, "en")
    assert text.splitlines()[-1] == (
        "briefings of risk cannot be written on http://127.0.0.1:6066 (no_space): 2 waiting, 3 attempt(s) since "
        "09-27 22:20, next in 20 s: [Errno 28] No space left on device"
    )
    assert "cannot be written" not in render(merge(s, [ANSWER]), s.tz, "en")


def test_a_refusal_without_a_known_code_is_shown_as_the_worker_wrote_it_brackets_and_all(
    tmp_path: Path,
) -> None:
    s = _settings(tmp_path)
    # A row from before reason codes (or a code this release does not know): the table shows the worker's message,
    # which names the file; rich read `[draft]` as a style and dropped it, and `[/b]` made `predigest status` raise.
    reason = "inbox/jay/[draft] plan [/b].md: it is a symlink (never followed)"
    newest = {"path": "inbox/jay/[draft] plan [/b].md", "reason_code": None, "reason": reason}
    refused = {"count": 1, "newest": {**newest, "seen_at": "2026-09-27T14:10:00+00:00"}}
    answer = {**ANSWER, "axes": [{**ANSWER["axes"][0], "refused": refused}]}
    lines = render(merge(s, [answer]), s.tz, "en").splitlines()
    inference = next(line for line in lines if line.startswith("inference"))
    assert f"1 (newest: {reason}, 09-27 22:10)" in inference


@pytest.mark.parametrize("path", ["/", ""])
async def test_an_unreachable_worker_is_reported_not_raised(path: str) -> None:
    answers = await fetch([f"http://127.0.0.1:{free_port()}{path}"])
    assert len(answers) == 1 and answers[0]["error"]
