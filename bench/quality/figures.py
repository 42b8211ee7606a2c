"""A figure of the quality benchmark: its value, its target and its verdict, overall and per root."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, "==": operator.eq}


@dataclass
class Tally:
    """A ratio being counted: hits of total, with examples for the reader."""

    hits: int = 0
    total: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, hit: bool, example: str | None = None, keep: int = 12) -> None:
        self.total += 1
        self.hits += int(hit)
        if example is not None and len(self.examples) < keep:
            self.examples.append(example)

    @property
    def ratio(self) -> float | None:
        return self.hits / self.total if self.total else None


@dataclass
class Figure:
    """One line of the report: `name value target verdict`."""

    name: str
    value: float | None
    target: str  # ">=0.95", "<=0", "==1" …, or "" for a figure reported without a target
    about: str
    per_root: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    # With nothing to count (no D-items, no suggestions …) a required figure fails: an empty briefing
    # must not pass by saying nothing.
    required: bool = True

    @property
    def verdict(self) -> str:
        if not self.target:
            return "info"
        if self.value is None:
            return "FAIL" if self.required else "n/a"
        op, bound = self.target[:2], float(self.target[2:])
        return "PASS" if _OPS[op](round(self.value, 4), bound) else "FAIL"

    def line(self) -> str:
        value = (
            "n/a"
            if self.value is None
            else f"{self.value:.2f}"
            if isinstance(self.value, float)
            else str(self.value)
        )
        return f"{self.name} {value} {self.target or '-'} {self.verdict}"

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "target": self.target or None,
            "verdict": self.verdict,
            "about": self.about,
            "per_root": self.per_root,
            "detail": self.detail,
        }


def ratio_figure(
    name: str, tallies: dict[str, Tally], target: str, about: str, detail: dict[str, Any] | None = None
) -> Figure:
    """A share over every root, with each root's own share and examples."""
    hits = sum(t.hits for t in tallies.values())
    total = sum(t.total for t in tallies.values())
    per_root = {
        r: {"value": t.ratio, "hits": t.hits, "of": t.total, "examples": t.examples}
        for r, t in tallies.items()
    }
    return Figure(name, hits / total if total else None, target, about, per_root, detail or {})


def count_figure(name: str, counts: dict[str, Tally], target: str, about: str) -> Figure:
    """A count over every root (the tallies' hits), with examples."""
    per_root = {r: {"value": t.hits, "examples": t.examples} for r, t in counts.items()}
    return Figure(name, sum(t.hits for t in counts.values()), target, about, per_root)
