"""The regular expressions of processors/ (and the Python references of its compiled pass), found in the source,
and the adversarial inputs each is run over: a prefix taken from the pattern's own words, then a long run of one
unit, then a character that makes the match fail late. Used by tests/processors/test_regex_scaling.py (a hang
guard) and bench/parse_growth.py (how their time grows).
"""

from __future__ import annotations

import ast
import importlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

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


def inputs(p: re.Pattern[str], n: int) -> Iterator[tuple[str, str]]:
    """(label, text of about n characters) for every case of `p` and every late-failing end."""
    for (prefix, unit), end in itertools.product(_cases(p), ("\x00x", "", ")x")):
        yield f"{prefix!r} + {unit!r}*n + {end!r}", prefix + unit * (n // len(unit)) + end
