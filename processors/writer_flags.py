"""What a writer marked to verify, and which figures stand without a source: read claim by claim.

A claim is one line of a section: a list item, a table row or a paragraph line (TODO(structure): take list
items and rows from `processors.structure` blocks once it lands, so a wrapped item is one claim).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from processors.arxiv_ids import extract_arxiv_ids
from processors.key_points import STRIKING, clean_line

# Words a writer uses to say "this needs checking", in Chinese, English and Korean.
_FLAG_WORDS = (
    "待核实", "需核实", "待核验", "需核验", "待确认", "需确认", "待验证", "需验证", "存疑", "未核实", "未经证实",
    "unverified", "[verify]", "needs verification", "need verification", "to be verified", "needs checking",
    "unconfirmed", "needs confirmation", "확인 필요", "확인필요", "미확인", "확인 불가", "확인불가", "검증 필요",
    "검증필요", "사실 확인 필요",
)  # fmt: skip
_FLAG = re.compile(
    "|".join(
        [re.escape(w) for w in _FLAG_WORDS] + [r"⚠(?!\ufe0f?\s*(?:警告|注意|警示|warning|caution|주의|경고))"]
    ),
    re.IGNORECASE,
)
# `TBD` marks a figure still open; elsewhere (`Code: TBD`) it is a placeholder, not a doubt. Its letter before
# is looked at once `TBD` is read (a lookbehind first was tried at every character of a line).
_WEAK_FLAG = re.compile(r"TBD(?<![A-Za-z]TBD)(?![A-Za-z])|[(（]\s*\?\s*[)）]")
# A legend explaining the marks is the note's own apparatus, not a claim.
_LEGEND_LINE = re.compile(
    r"^\s*(?:>\s*)?(?:图例|说明|标注说明|符号说明|注|legend|key|notation|범례|표기|기호)\s*[:：]", re.I
)
_DEFINES = re.compile(
    r"^\ufe0f?\s*(?:=|＝|表示|代表|意为|意味着|means|indicates|marks|denotes|stands for|is|are|는|은|=)(?![A-Za-z])",
    re.I,
)
_LEGEND_HEADING = re.compile(r"图例|标注说明|符号说明|legend|notation|범례|표기법", re.IGNORECASE)
# A figure with a named source on its line: `据 AIMultiple 2026-04 实证`, `according to NVIDIA`, `출처: …`.
_NAMED_SOURCE = re.compile(
    r"(?<![数证依占])据\s*\S{2,}|援引|引自|(?:来源|出处|数据来源|source|sources|출처)\s*[:：]|according to \w|"
    r"(?<!\w)\w+에 따르면|reported by \w|cited from \w",
    re.IGNORECASE,
)
# Stats and scaffolding: `总论文数：15`, `Read time: 12 min`, `Relevance Score: 7`, `相关度：85%`.
_SCAFFOLD = re.compile(
    r"^[^:：]{1,24}[:：]\s*[\d.,%/\s]+(?:min|mins|minutes|分钟|篇|个|件|次|점|/\s*\d+)?\s*$|"
    r"^(?:总论文数|论文数|阅读时间|预计阅读|read time|reading time|relevance|score|相关度|评分|stars|热度|"
    r"upvotes|字数|word count|likes|점수|관련도)",
    re.IGNORECASE,
)
# A section summarising one paper (its abstract, TL;DR, original title): its figures are that paper's own.
_PAPER_SUMMARY = re.compile(
    r"^\s*(?:\*\*)?(?:原文标题|原标题|论文标题|摘要|abstract|tl;\s?dr|논문 제목|초록)(?:\*\*)?\s*[:：]",
    re.IGNORECASE | re.MULTILINE,
)
# An earlier briefing's own D-items (`D193：… 待核实`) are numbered already, not a writer's flag.
_D_ITEM = re.compile(r"^(?:#+\s*)?D\d{1,6}\s*[：:]")
MAX_FLAGS_PER_NOTE = 8
MAX_LINES_PER_UNIT = 2000


@dataclass(frozen=True)
class FlaggedClaim:
    """A claim its writer marked: the claim as written and its subject, the mark taken out."""

    line: str
    subject: str


def is_flag_legend(line: str) -> bool:
    """A line that explains a mark (`图例：⚠ = 待核实`, `⚠ means unverified`) rather than using it."""
    if _LEGEND_LINE.match(line):
        return True
    return any(_DEFINES.match(line[m.end() :]) for m in _FLAG.finditer(line))


def strip_flags(line: str) -> str:
    """The claim without its marks and the brackets around them."""
    text = _WEAK_FLAG.sub("", _FLAG.sub("", line))
    text = re.sub(r"[（(\[【]\s*[)）\]】]", "", text)
    return re.sub(r"\s+", " ", text).strip(" ，,；;。.、:：·-—|")


def _claim_lines(text: str) -> Iterator[tuple[str, bool]]:
    """(cleaned line, is a table header row) for each line with text, at most MAX_LINES_PER_UNIT."""
    raw = text.splitlines()[:MAX_LINES_PER_UNIT]
    for n, line in enumerate(raw):
        header = (
            line.lstrip().startswith("|")
            and n + 1 < len(raw)
            and bool(re.match(r"^\s*+\|?\s*+:?-{3,}", raw[n + 1]))
        )
        cleaned = clean_line(line)
        if cleaned:
            yield cleaned, header


def flagged_claims(heading: str, text: str, limit: int = MAX_FLAGS_PER_NOTE) -> list[FlaggedClaim]:
    """The claims of one section its writer marked to verify (at most `limit`); a mark alone on a line marks
    the line above."""
    if _LEGEND_HEADING.search(heading):
        return []
    out: list[FlaggedClaim] = []
    previous = ""
    for line, header in _claim_lines(text):
        strong = bool(_FLAG.search(line))
        weak = not strong and bool(_WEAK_FLAG.search(line)) and bool(re.search(r"\d", strip_flags(line)))
        if header or not (strong or weak) or is_flag_legend(line) or _D_ITEM.match(line):
            previous = "" if header else line
            continue
        subject = strip_flags(line)
        if len(subject) < 4 and previous:
            line, subject = f"{previous} {line}", strip_flags(previous)
        if len(subject) >= 4:
            out.append(FlaggedClaim(line=line, subject=subject))
            if len(out) >= limit:
                break
        previous = ""
    return out


def unsourced_figures(text: str, sourced: bool) -> list[str]:
    """Lines with a striking figure (%, ×, 倍) that name no source, in a section citing no id or URL."""
    if sourced:
        return []
    out: list[str] = []
    for line, header in _claim_lines(text):
        if header or not STRIKING.search(line) or _SCAFFOLD.match(line) or _FLAG.search(line):
            continue
        if extract_arxiv_ids(line) or "http" in line or _NAMED_SOURCE.search(line):
            continue
        out.append(line)
    return out


def names_a_source(lines: Sequence[str]) -> bool:
    """A source line in the section (`来源：…`, `Source: …`, `출처: …`) vouches for its figures, and so does a
    paper summary (`摘要：`, `Abstract:`, `TL;DR:`): the figures are the paper's own results."""
    return any(_NAMED_SOURCE.search(line) or _PAPER_SUMMARY.match(line) for line in lines)
