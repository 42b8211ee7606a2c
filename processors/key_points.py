"""Key points, thesis and number highlights taken from note text, keeping every figure intact."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)、](?!\d))\s+")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}")
_SOURCE_LINE = re.compile(r"^\s*(?:来源|原始来源|source|sources|url|链接)\s*[:：]", re.IGNORECASE)
_SENTENCE = re.compile(r"[^。！？；!?;]+[。！？；!?;]?")
# The space between two English sentences (kept out of both); led by the stop, not by a lookbehind tried at every
# character (twice as fast over a card's paragraphs).
_EN_BREAK = re.compile(r"[.!?](\s+)(?=[A-Z])")
# A figure: 98.6%, 1.7%→92.2%, 3.8×, 2-4×, 46 倍, 5200 万, -72.4%, 0.36%, 4.7x.
_UNIT = r"(?:%|×|x(?![a-z])|倍|万|亿|ms|s(?![a-z])|GB|GiB|MB|KB|B(?![a-z]))"
# Started from its first character, a sign or a digit, then the one before it checked (`(?<![A-Za-z0-9.])`
# leading, the search tried it at every character: ~2x slower over a 10k window's texts; the same matches).
NUMBER = re.compile(
    rf"[-+−\d](?<![A-Za-z0-9.].)(?:(?<=[-+−])\d+|(?<=\d)\d*)(?:\.\d+)?\s*{_UNIT}?"
    r"(?:(?:\s*(?:→|->|~|–|升至|降至|提升至|到|至)\s*|-)\d+(?:\.\d+)?\s*(?:%|×|x(?![a-z])|倍)?)?",
    re.IGNORECASE,
)
STRIKING = re.compile(r"\d(?:\.\d+)?\s*(?:%|×|倍)|\d\s*x(?![a-z0-9])", re.IGNORECASE)
_THESIS_MARKERS = (
    "核心", "关键", "意味着", "范式", "表明", "证明", "结论", "首次", "标杆",
    "key", "shows", "show that", "demonstrat", "conclude", "first",
)  # fmt: skip
# What a paper proposes, when no sentence states a finding (abstracts: `我们提出…`, `we propose …`).
_PROPOSAL_MARKERS = ("提出", "we propose", "we introduce", "we present", "this paper presents")
_MARKUP = re.compile(r"\*\*|__|`|^#+\s*")
_WHITE = re.compile(r"\s+")
_DECIMAL = re.compile(r"\d")  # a decimal digit of any script: each is also a str.isdigit() digit
MAX_POINT = 240  # a long sentence is kept whole: clipping it could cut a figure


def clean_line(line: str) -> str:
    """A Markdown line as plain text: bullets, emphasis and table pipes removed; '' for rules."""
    line = line.strip()
    if not line or _TABLE_RULE.match(line) or set(line) <= set("-=*_ "):
        return ""
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip("|").split("|")]
        return " · ".join(c for c in cells if c)
    return _MARKUP.sub("", _BULLET.sub("", line)).strip()


def _clip(text: str, limit: int = MAX_POINT) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph, Chinese or English punctuation."""
    out: list[str] = []
    for part in _SENTENCE.findall(text):
        at = 0
        for m in _EN_BREAK.finditer(part):
            out.append(part[at : m.start(1)].strip())
            at = m.end(1)
        out.append(part[at:].strip())
    return [s for s in out if s]


def has_digit(text: str) -> bool:
    """`any(ch.isdigit() for ch in text)` in C: a decimal digit, else (outside ASCII) a digit such as `²`, `①`."""
    return _DECIMAL.search(text) is not None or (not text.isascii() and any(map(str.isdigit, text)))


def has_figure(text: str) -> bool:
    """True when the text carries a striking figure (a %, ×, x or 倍 after a digit)."""
    return bool(STRIKING.search(text))


def key_points(texts: Iterable[str], limit: int = 6) -> list[str]:
    """A section's opening sentence, its bullets and its sentences with figures, in document order."""
    key = tuple(texts)
    # Ranking, substance checks and building all ask for the same sections' points; the cache outlives the
    # briefing, so it keeps section-sized texts only.
    cached = sum(map(len, key)) <= _CACHED_UP_TO
    return list(_key_points_cached(key, limit) if cached else _key_points(key, limit))


_CACHED_UP_TO = 8192  # characters


@lru_cache(maxsize=4096)
def _key_points_cached(texts: tuple[str, ...], limit: int) -> tuple[str, ...]:
    return _key_points(texts, limit)


def _key_points(texts: tuple[str, ...], limit: int) -> tuple[str, ...]:
    out: list[str] = []

    def add(point: str) -> None:
        point = _clip(point)
        if point not in out and not any(point in other for other in out):
            out.append(point)

    for text in texts:
        lead = True
        for raw in text.splitlines():
            if len(out) >= limit:
                # Points are only ever appended, so the first `limit` are final: checking every further line
                # against all of them was quadratic (a minute for a 10,000-line note).
                return tuple(out[:limit])
            if raw.lstrip().startswith("|"):
                continue  # a table row: its cells are read by the paper they belong to, never joined
            line = clean_line(raw)
            if not line or _SOURCE_LINE.match(line):
                continue
            if _BULLET.match(raw):
                add(line)
            elif lead:
                add(sentences(line)[0] if sentences(line) else line)  # the lead says what the section is
                for s in sentences(line)[1:]:
                    if has_digit(s):
                        add(s)
            else:
                for s in sentences(line):
                    if has_digit(s):
                        add(s)
            lead = False
    return tuple(out[:limit])


def thesis(texts: Iterable[str]) -> str:
    """The sentence that states the claim: one with a thesis marker, else the first sentence."""
    first = ""
    for text in texts:
        for raw in text.splitlines():
            line = clean_line(raw)
            if not line or _SOURCE_LINE.match(line):
                continue
            for sentence in sentences(line):
                first = first or sentence
                lowered = sentence.lower()
                if any(m in lowered for m in _THESIS_MARKERS):
                    return _clip(sentence, 200)
    return _clip(first, 200)


def highlights(points: Iterable[str], limit: int = 4) -> list[str]:
    """Short `context figure` phrases for the summary line, e.g. `吞吐量提升 3.8×`."""
    out: list[str] = []
    for point in points:
        for m in NUMBER.finditer(point):
            figure = m.group(0).strip()
            if not STRIKING.search(figure):
                continue
            before = re.split(r"[，,；;：:（(。、/]", point[: m.start()])[-1].strip()
            if len(before) > 16:
                # Cut to the last 16 characters without leaving half a Latin word in front.
                before = (
                    re.sub(r"^[A-Za-z0-9.-]+\s*", "", before[-16:]) if before[-17].isalnum() else before[-16:]
                )
            phrase = f"{before} {figure}".strip()
            if phrase not in out:
                out.append(phrase)
            if len(out) >= limit:
                return out
    return out


def figures(text: str) -> set[str]:
    """The striking figures of a text, normalised (`92.2%`, `3.8×`), to compare against the living doc."""
    return set(figures_in_order(text))


def figures_in_order(text: str) -> list[str]:
    """The striking figures of a text, normalised, each once, in the order the text first states them."""
    found: dict[str, None] = {}
    for m in NUMBER.finditer(text):
        if STRIKING.search(m.group(0)):
            found.setdefault(_WHITE.sub("", m.group(0)).replace("x", "×").replace("X", "×"))
    return list(found)


_ENUMERATION = re.compile(r"[（(]\s*(?:\d{1,2}|[ivx]{1,4})\s*[)）]|^\s*\d{1,2}[.、)]\s", re.IGNORECASE)


def _has_number(text: str) -> bool:
    """A number besides an enumeration mark: `（2）在监督微调期间…` says no number."""
    # Taking the marks out adds no digit: a text without one (most prose) is not rewritten.
    return has_digit(text) and has_digit(_ENUMERATION.sub("", text))


class Said(NamedTuple):
    """One thing a unit says: a sentence of a paragraph, or a bullet (a list item, a table cell) kept whole."""

    text: str
    bullet: bool = False


def _candidates(said: Iterable[Said]) -> Iterator[Said]:
    for s in said:
        if s.bullet and len(s.text) > MAX_POINT:
            yield from (Said(x) for x in sentences(s.text))  # a bullet too long to be one point
        else:
            yield s


class Replayed(Iterable[Said]):
    """What a unit says, each statement made when first asked for and kept: a card says hundreds of things, and
    its points and thesis are found in the first few (`point_list`, `thesis_of`: each reads it from the start)."""

    def __init__(self, said: Iterable[Said]) -> None:
        self._said = iter(said)
        self._kept: list[Said] = []

    def __iter__(self) -> Iterator[Said]:
        yield from self._kept
        at = len(self._kept)
        while True:
            if at == len(self._kept):
                nxt = next(self._said, None)
                if nxt is None:
                    return
                self._kept.append(nxt)
            yield self._kept[at]
            at += 1


def point_list(said: Iterable[Said], limit: int = 6) -> list[str]:
    """A unit's key points from what it says: the figure-bearing sentences first, then its opening sentence,
    then its other bullets and its sentences with numbers, in order."""
    found = Replayed(_candidates(said))
    first = next(iter(found), None)
    if first is None:
        return []
    # Each is looked at only until `limit` points are found: a card says hundreds of things.
    figures = (s.text for s in found if has_figure(s.text))
    others = (s.text for s in itertools.islice(found, 1, None) if s.bullet or _has_number(s.text))
    out: list[str] = []
    for point in itertools.chain(figures, [first.text], others):
        point = _clip(point)
        if point not in out and not any(point in other for other in out):
            out.append(point)
            if len(out) >= limit:
                break
    return out


def thesis_of(statements: Iterable[Said]) -> str:
    """The sentence of a unit's own statements that states the claim: one with a thesis marker, else one saying
    what it proposes, else its first figure-bearing sentence, else its first sentence."""
    said: list[str] = []
    # Split while looking for a thesis marker: the first one found ends the search, the rest is never split.
    for sentence in (x for s in statements for x in sentences(s.text)):
        said.append(sentence)
        if any(m in sentence.lower() for m in _THESIS_MARKERS):
            return _clip(sentence, 200)
    marked = next((s for s in said if any(m in s.lower() for m in _PROPOSAL_MARKERS)), "")
    if marked:
        return _clip(marked, 200)
    return _clip(next((s for s in said if has_figure(s)), said[0] if said else ""), 200)


def has_substance(statements: Sequence[Said]) -> bool:
    """Something an editor could write down: a number, or at least two statements."""
    return len(statements) >= 2 or any(has_digit(s.text) for s in statements)
