"""Every regular expression in processors/ runs in time linear in its input (issue 15: 500 spaces before an arXiv
id took 93 s in one pattern; a run of white space or of `-a` took quadratic time in others).

The patterns are found in the source (each `re.<function>(pattern …)` call, module level or not), so a new one
is covered without being listed. Each runs over adversarial inputs at two sizes: a prefix taken from the
pattern's own words, then a long run of one unit, then a character that makes the match fail late. 16x the
input may take ~16x the CPU time; quadratic backtracking would take ~256x.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

# Slower than a unit test by design (many cases, worst-case inputs, or processes): its own bound.
pytestmark = pytest.mark.timeout(120)

PROCESSORS = Path(__file__).resolve().parents[2] / "processors"
REFERENCE = Path(__file__).resolve().parent / "reference"
_FUNCTIONS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
# The values a pattern built inside a function is made of, as its callers pass them.
SAMPLE_LOCALS = {
    "escaped": re.escape("KV cache"),
    "keyword": "vllm",
    "section": SimpleNamespace(number="3.2"),
    "name": "vLLM",
    "words": ["kv", "cache"],
}
# Runs that make a quantifier work: white space, words, digits, dotted numbers, hyphenated and bracketed text.
UNITS = (" ", "\n", "a", "A1", "1", "1.", "-a", "(", ") ", "a ", "中", "arxiv ", "§1 ", "[a]", "!")
PREFIX_UNITS = (" ", "\n", "a", "1", "1.", "-a", "a ")  # after a prefix: the runs its quantifiers take
# Prefixes that lead into a pattern's later quantifiers, for the shapes its own words do not reach.
EXTRA_PREFIXES = {
    r"total(?: papers)?": ("total: 1", "[total: 1 "),
    r"\(@": ("(@a)", "x"),
    r"[（(]": ("(", "Foo (", "（"),
    r"[(\[（【]": ("(", "[back"),
    r"^\W*": ("!",),
    r"\d{4}\.\d{4,5}": ("2401.", "ab 2401.1234"),
    r"§\s*": ("§",),
    r"https?://": ("https://arxiv.org/",),
}
SMALL, SCALE = 125, 16
# Below this the large input is linear for sure (quadratic work on 2,000 characters is 2M steps, ~20 ms), and
# microsecond timings are noise.
NOISE = 0.003


@dataclass(frozen=True)
class Found:
    where: str  # module:line
    pattern: re.Pattern[str]


def _flags(call: ast.Call, namespace: dict[str, object]) -> int:
    """The re.I / re.M … among a call's arguments."""
    flags = 0
    for arg in [*call.args[1:], *(k.value for k in call.keywords)]:
        source = ast.unparse(arg)
        if source.startswith("re.") and source.split(".")[1].isupper():
            flags |= int(eval(source, namespace))  # our own source: a flag constant
    return flags


def _modules() -> list[tuple[Path, str]]:
    """processors/, and the Python references of its compiled pass: property tests and benches run those on the
    same hostile text, so they must stay linear too."""
    own = [(p, f"processors.{p.stem}") for p in sorted(PROCESSORS.glob("*.py"))]
    return own + [(p, f"tests.processors.reference.{p.stem}") for p in sorted(REFERENCE.glob("*.py"))]


def _patterns() -> list[Found]:
    found = []
    for path, name in _modules():
        module = importlib.import_module(name)
        namespace = {**vars(module), **SAMPLE_LOCALS}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in _FUNCTIONS
                and node.args
            ):
                continue
            text = eval(ast.unparse(node.args[0]), namespace)  # our own source
            found.append(Found(f"{path.stem}:{node.lineno}", re.compile(text, _flags(node, namespace))))
    return found


PATTERNS = _patterns()


def _cases(p: re.Pattern[str]) -> list[tuple[str, str]]:
    """(prefix, unit): every unit alone, and the pattern's own words and extra prefixes before a few runs."""
    words = re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff\uac00-\ud7af]{2,}", p.pattern)
    extra = [x for key, values in EXTRA_PREFIXES.items() if key in p.pattern for x in values]
    own = [w.lower() if p.flags & re.IGNORECASE else w for w in words]
    prefixes = [x for x in dict.fromkeys([*extra, *own[:4]]) if x]
    return [("", u) for u in UNITS] + [(x, u) for x in prefixes for u in PREFIX_UNITS]


def _cpu(p: re.Pattern[str], text: str, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        for _m in p.finditer(text):
            pass
    return time.process_time() - start


def test_every_pattern_in_processors_is_found() -> None:
    # A guard on the finder itself: these modules are full of patterns, and each one must be under test.
    where = {f.where.split(":")[0] for f in PATTERNS}
    assert {
        "arxiv_ids",
        "id_titles",
        "discrepancies",
        "key_points",
        "living_doc",
        "units",
        "relevance",
    } <= where
    assert len(PATTERNS) >= 80
    used = {key for key in EXTRA_PREFIXES if any(key in f.pattern.pattern for f in PATTERNS)}
    assert used == set(EXTRA_PREFIXES), "an extra prefix no longer matches any pattern"


@pytest.mark.parametrize("found", PATTERNS, ids=[f.where for f in PATTERNS])
def test_pattern_time_grows_linearly_with_its_input(found: Found) -> None:
    p = found.pattern
    worst, case = 0.0, ""
    for (prefix, unit), end in itertools.product(_cases(p), ("\x00x", "", ")x")):
        small = prefix + unit * (SMALL // len(unit)) + end
        large = prefix + unit * (SMALL * SCALE // len(unit)) + end
        took = _cpu(p, large, 1)
        if took < NOISE:
            continue
        # The small input SCALE times, so that both measure the same amount of linear work.
        ratio = took / max(_cpu(p, small, SCALE), 1e-6)
        if ratio > worst:
            worst, case = ratio, f"{prefix!r} + {unit!r}*n + {end!r}"
    # Linear work gives ~1; quadratic backtracking ~16.
    assert worst < 4, f"{found.where} {p.pattern!r}: 16x the input took {worst * 16:.0f}x the time on {case}"
