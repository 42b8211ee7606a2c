"""How parse_document's CPU time grows with a hostile note (issue 15): the exponent k of time ∝ size^k.

Also parse_structure alone (how units and the living document read a note), on the shapes its parser meets, and
every regular expression of processors/ on its adversarial inputs (`regex`: the worst pattern's k, 125 to 2,000
characters; tests/processors/regex_cases.py finds them).

`make bench` records it among its stages; on its own (seconds, no Kafka):
    .venv/bin/python -m bench.parse_growth
Each shape (80,000 blank lines hung a parse once, a regex backtracking over every following line) is parsed at
10,000 and 80,000 characters; k ≤ 1.5 is linear with room for a loaded machine (quadratic is 2).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable
from functools import partial
from zoneinfo import ZoneInfo

from processors.documents import parse_document
from processors.models import RawFile
from processors.structure import parse_structure
from tests.processors.regex_cases import PATTERNS, inputs

SH = ZoneInfo("Asia/Shanghai")
TARGET_EXPONENT = 1.5
SMALL, LARGE = 10_000, 80_000  # characters


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: unit * (n // len(unit))


# A note of about n characters, by shape: repeated lines and inline runs, then sets the pass must look up.
SHAPES: dict[str, Callable[[int], str]] = {
    "blank-lines": _repeat("\n"),
    "nested-quotes": _repeat(">"),
    "star-runs": _repeat("*a"),
    "pipe-rows": _repeat("|a|b|\n"),
    "headings": _repeat("# h\n"),
    "bullets": _repeat(" \n- a\n"),
    "ids": _repeat("arXiv:2401.00001 "),
    "cjk": _repeat("中文 **粗** "),
    "distinct-ids": lambda n: " ".join(f"arXiv:{2401 + i % 8}.{10000 + i:05d}" for i in range(n // 17)),
    "id-table": lambda n: (
        "| Title | id |\n|---|---|\n" + "".join(f"| t{i} | 2401.{10000 + i:05d} |\n" for i in range(n // 21))
    ),
    "long-title": lambda n: (
        "---\ntitle: "
        + " ".join(f"w{i}" for i in range(n // 12))
        + "\n---\n"
        + " ".join(f"w{i}" for i in range(n // 12))
    ),
}


# parse_structure's hostile shapes, each a unit repeated: keyed `structure/<name>` among the exponents.
STRUCTURE_UNITS: dict[str, str] = {
    "blank": "\n", "nested-quote": ">", "quote-space": "> ", "stars": "*a", "underscores": "_a ",
    "pipes": "|a|b|\n", "brackets": "[", "lt": "<", "headings": "# h\n", "nested-list": "- " * 3 + "x\n",
    "cjk": "中文 **粗** ",
}  # fmt: skip


def _cpu_seconds(parse: Callable[[], object], repeats: int) -> float:
    """CPU time of this process for one parse, best of `repeats`: other processes' load does not stretch it."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        parse()
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)  # below the clock's resolution a small parse reads as 0


def _document(text: str) -> Callable[[], object]:
    data = text.encode()
    raw = RawFile(path="inbox/a/2026-09-26-x.md", content=data, size=len(data), mtime=0.0,
                  sha256=hashlib.sha256(data).hexdigest())  # fmt: skip
    return lambda: parse_document(raw, zone=SH)


def _exponent(small: Callable[[], object], large: Callable[[], object], repeats: int) -> float:
    return round(
        math.log(_cpu_seconds(large, repeats) / _cpu_seconds(small, repeats)) / math.log(LARGE / SMALL), 2
    )


def measure(repeats: int = 3) -> dict[str, float]:
    """The growth exponent per shape between SMALL and LARGE characters."""
    got = {
        name: _exponent(_document(make(SMALL)), _document(make(LARGE)), repeats)
        for name, make in SHAPES.items()
    }
    for name, unit in STRUCTURE_UNITS.items():
        small, large = unit * (SMALL // len(unit)), unit * (LARGE // len(unit))
        got[f"structure/{name}"] = _exponent(
            partial(parse_structure, small), partial(parse_structure, large), repeats
        )
    got["regex"] = regex_exponent()
    return got


REGEX_SMALL, REGEX_SCALE = 125, 16  # characters, and the factor to the large input
# Below this the large input is linear for sure (quadratic work on 2,000 characters is 2M steps, ~20 ms), and
# microsecond timings are noise.
REGEX_NOISE = 0.003


def _scan(p: re.Pattern[str], text: str, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        for _m in p.finditer(text):
            pass
    return time.process_time() - start


def regex_exponent() -> float:
    """The worst k over every pattern and adversarial input: the small one scanned REGEX_SCALE times, so that
    both measure the same amount of linear work (ratio ~1 linear, ~16 quadratic)."""
    worst = 1.0
    for found in PATTERNS:
        small = dict(inputs(found.pattern, REGEX_SMALL))
        for case, text in inputs(found.pattern, REGEX_SMALL * REGEX_SCALE):
            took = _scan(found.pattern, text, 1)
            if took >= REGEX_NOISE:
                ratio = took / max(_scan(found.pattern, small[case], REGEX_SCALE), 1e-6)
                worst = max(worst, 1 + math.log(max(ratio, 1.0)) / math.log(REGEX_SCALE))
    return round(worst, 2)


def verdict(exponents: dict[str, float]) -> str:
    """One line: the worst shape's exponent against the target."""
    worst = max(exponents, key=lambda k: exponents[k])
    met = exponents[worst] <= TARGET_EXPONENT
    return (
        f"parse time on hostile notes ({SMALL:,} to {LARGE:,} chars) grows as size^k, worst k = "
        f"{exponents[worst]} ({worst}); target ≤ {TARGET_EXPONENT}: {'MET' if met else 'MISSED'}"
    )


if __name__ == "__main__":
    got = measure()
    print(", ".join(f"{k} {v}" for k, v in got.items()))
    print(verdict(got))
