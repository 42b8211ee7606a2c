"""Versions of named software products (`vLLM 0.3.3`, `TensorRT-LLM v1.2.1`): the input of version conflicts.

A version here is a release number: three or more parts (`0.6.3`), or two after a `v` (`v1.2`). Two-part
numbers after a name are model generations (`Gemini 2.5`, `Llama 3.1`), benchmark editions (`AlpacaEval 2.0`)
or measurements (`TTFT 1.4`), and a different one is no contradiction, so they are never read as versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# A release number standing alone: not inside a word, a path, a § number or a range, and not followed by a
# unit, a multiplier, a percentage, a size (`7B`) or the other end of a range (`1.3–1.4×`).
_VERSION = re.compile(
    r"(?<![\w.\-–~～—/@#§:])(?P<v>[vV])?(?P<number>\d{1,4}(?:\.\d{1,6}){1,3})"
    r"(?![\w.%×倍+]|\s*[-–~～—]\s*\d|\s*[x×倍%])"
)
# What every release kept has (three parts, or a `v`): a line with neither, most prose, is not searched for
# `_VERSION`, whose leading lookbehind is tried at every character (these two searches cost a fraction of it).
_THREE_PARTS = re.compile(r"\.\d+\.")
_AFTER_V = re.compile(r"[vV]\d")
_CONSTRAINT = re.compile(r"[<>=~^!]=?\s*[vV]?$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+_.-]*[A-Za-z0-9+]|[A-Za-z]")
# Lower-case names that are products as written (package names); any other product name has a capital.
_KNOWN_LOWER_TEXT = """vllm sglang langgraph langchain llamaindex pydantic pytorch torch transformers ollama triton deepspeed
    flashinfer lmcache mooncake llama.cpp numpy python cuda tensorrt onnxruntime jax kubernetes kubectl
    docker helm ray faust duckdb"""
KNOWN_LOWER = frozenset(_KNOWN_LOWER_TEXT.split())
# Capitalised words that precede numbers without naming a product: metrics, document scaffolding, prose.
_NOT_PRODUCT_TEXT = """a an and or the of in on at by to from with via vs than about only since after before until using
    use used into for per over under up down is was are be as if then when while also both all each
    section sec table tab figure fig eq equation appendix chapter step phase stage level era part round
    version ver release rel v top rank score tier gen batch epoch layer head item no number id arxiv doi
    ttft tpot itl tbt e2e p50 p90 p95 p99 f1 bleu rouge em mmlu gsm8k humaneval acc accuracy auc wer cer
    ppl perplexity qps tps rps flops latency throughput speedup memory cost price day week month year q1 q2
    q3 q4 h1 h2 ratio rate speed time"""
_NOT_PRODUCT = frozenset(_NOT_PRODUCT_TEXT.split())
# A second word that makes a two-word product name (`Claude Code`, `Codex CLI`, `Gemini CLI`).
_SECOND_WORDS = frozenset(
    ("code", "cli", "server", "stack", "engine", "studio", "runtime", "serve", "desktop", "sdk", "api")
)
MAX_MENTIONS = 64  # per text scanned: a note listing thousands of versions is a changelog, not a claim
MAX_LINE = 2000  # characters of one line scanned; a longer "line" is data, not prose


@dataclass(frozen=True)
class VersionMention:
    """One product named with one release number."""

    key: str  # the product normalised: `vllm`, `tensorrtllm`, `claudecode`
    product: str  # as written: `TensorRT-LLM`
    written: str  # the version as written: `v0.30.0`
    version: str  # normalised: `0.30.0` (no `v`, at least three parts)

    @property
    def release(self) -> tuple[int, int]:
        """(major, minor): two mentions that agree on these name the same release line."""
        parts = [int(p) for p in self.version.split(".")]
        return parts[0], parts[1]


def product_key(name: str) -> str:
    """`TensorRT-LLM` → `tensorrtllm`: the same product however it is spelt."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def normalise_version(number: str) -> str:
    """`v0.30` → `0.30.0`: without `v`, padded to three parts, so keys do not depend on the spelling."""
    parts = number.lstrip("vV").split(".")
    return ".".join([str(int(p)) for p in parts] + ["0"] * (3 - len(parts)))


def _is_product(word: str) -> bool:
    low = word.lower()
    if low in _NOT_PRODUCT or not any(c.isalpha() for c in word):
        return False
    return low in KNOWN_LOWER or any(c.isupper() for c in word)


def _product_before(text: str, end: int) -> str | None:
    """The product named right before position `end` (one or two words, spaces only between), if any."""
    head = text[max(0, end - 80) : end]
    if not head.endswith((" ", "\t")) or _CONSTRAINT.search(head.rstrip()):
        return None
    words = list(_WORD.finditer(head))
    if not words or head[words[-1].end() :].strip():
        return None
    last = words[-1].group(0)
    if not _is_product(last):
        return None
    if (
        len(words) >= 2
        and last.lower() in _SECOND_WORDS
        and not head[words[-2].end() : words[-1].start()].strip()
    ):
        first = words[-2].group(0)
        if _is_product(first):
            return f"{first} {last}"
    return last


def versions_in(text: str, limit: int = MAX_MENTIONS) -> list[VersionMention]:
    """Every product release named in the text, at most `limit`; constraints (`>= 1.2.4`) are not mentions."""
    out: list[VersionMention] = []
    for line in text.splitlines():
        out.extend(_mentions(line[:MAX_LINE]))
        if len(out) >= limit:
            return out[:limit]
    return out


def _releases(line: str) -> Iterator[re.Match[str]]:
    if not (_THREE_PARTS.search(line) or _AFTER_V.search(line)):
        return
    for m in _VERSION.finditer(line):
        parts = m.group("number").split(".")
        if int(parts[0]) < 1000 and (len(parts) >= 3 or m.group("v")):  # not a year, not a two-part number
            yield m


def release_numbers(text: str, limit: int = MAX_MENTIONS) -> list[str]:
    """Every release number in the text, normalised, whether or not a product name stands before it."""
    out = [
        normalise_version(m.group("number")) for line in text.splitlines() for m in _releases(line[:MAX_LINE])
    ]
    return out[:limit]


def _mentions(line: str) -> Iterator[VersionMention]:
    for m in _releases(line):
        product = _product_before(line, m.start())
        if product is None:
            continue
        yield VersionMention(
            key=product_key(product),
            product=product,
            written=m.group(0),
            version=normalise_version(m.group("number")),
        )
