"""The briefings of real roots nobody here wrote, held byte for byte: any change to what an editor reads on
real material shows up here as a diff to review (`pytest --update-golden` accepts it)."""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path

import pytest

from bench.quality.builder import ROOT_NAMES, build
from bench.quality.runner import Briefed, RootRun, run

GOLDEN = Path(__file__).parent / "golden"


@cache
def _run(name: str) -> RootRun:
    return run(build(name))


def _last_day(result: RootRun) -> list[Briefed]:
    """The last day's close briefing of each axis: the window that holds every earlier day's history."""
    days = [b for b in result.briefs if b.scenario == "days"]
    last = max(b.step for b in days)
    return sorted((b for b in days if b.step == last), key=lambda b: b.axis)


def _cases() -> list[tuple[str, str]]:
    return [(name, b.axis) for name in ROOT_NAMES for b in _last_day(_run(name))]


@pytest.mark.parametrize(("name", "axis"), _cases())
def test_a_real_roots_briefing_is_exactly_its_golden_file(name: str, axis: str, update_golden: bool) -> None:
    briefed = next(b for b in _last_day(_run(name)) if b.axis == axis)
    text = briefed.emitted.markdown
    golden = GOLDEN / f"{name}-{axis}.md"
    if update_golden:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    expected = golden.read_text(encoding="utf-8")
    lines = difflib.unified_diff(expected.splitlines(), text.splitlines(), str(golden), "now", lineterm="")
    diff = "\n".join(list(lines)[:80])
    assert text == expected, f"the briefing changed; review, then pytest --update-golden:\n{diff}"
