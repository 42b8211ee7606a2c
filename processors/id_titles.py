"""Which title goes with which arXiv id, as the documents state it, read from the note's structure.

Sources in order of trust (`TRUST`): a paper card's title; the text of the link that points at the paper; the
cell under a table's title column in the row carrying the id; a heading carrying exactly one id; a
`原文标题：`/`Title:` line; the bold lead of an item carrying the id; the heading of a section whose first
paragraph opens with the id. Every candidate must pass `plausible_title`: never a venue, an author list, a
sentence or a cut fragment. The words a writer puts before an id in a section's first block
(`MadaKV (arXiv:…)`) are kept as the id's *name*: evidence for the D-items (the same name under two ids is a
likely typo) but never the paper's title. When nothing qualifies the id has no title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from processors.arxiv_ids import extract_arxiv_ids
from processors.boilerplate import section_boilerplate
from processors.markup import EMOJI
from processors.models import Document, DocumentSummary, TitledId
from processors.structure import Block, Structure, read_note

# Rank of each source; the arXiv API (added by the briefing) outranks them all.
TRUST = {"api": 7, "card": 6, "link": 5, "table": 4, "heading": 3, "title_line": 2, "lead": 1, "section": 0}
NAME = -1  # the rank of a name (`MadaKV`): a pair for the D-items, below every title
TITLE_FROM = TRUST["section"]  # the lowest rank that titles an id (below: a name)
_STRONG_FROM = TRUST["title_line"]  # ranks from here up are titles a writer states as titles

_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+|^\s*\[\d{1,4}\]\s*")
# White space is taken once (atomic groups) and a match starts at a run's first space, never inside it: split
# every possible way, or read again from each space, a long run of it cost quadratic (cubic) time.
_ID_NOISE = re.compile(r"(?:arxiv(?>\s*[: ]?\s*))?\d{4}\.\d{4,5}(?:v\d+)?|https?://\S+", re.IGNORECASE)
_EMPTY_BRACKETS = re.compile(r"[（(\[【]\s?[)）\]】]")  # what an id in brackets leaves
_TAG_PREFIX = re.compile(r"^\[[^\[\]]{1,40}\]\s*(?=\S+\s+\S+\s+\S)")  # `[vLLM] Efficient Memory …`
_AFFILIATION = re.compile(r"(?<!\s)\s*\(@[^()]{1,80}\)\s*$")  # `… PagedAttention(@UC Berkeley etc)`
# The name ends on a non-space (the white space after it is the separator's): 500 spaces took 93 s.
_BEFORE_ID = re.compile(
    r"([^/；;，,、。|：:]{1,59}?[^/；;，,、。|：:\s])(?>\s*)(?:[（(](?>\s*))?(?:arxiv(?>\s*[: ]?\s*))?"
    r"(\d{4}\.\d{4,5})(?:v\d+)?",
    re.IGNORECASE,
)
# Where `_BEFORE_ID` can find its id, and what may stand between the words and the id (a superset: the spaces,
# the bracket and the `arXiv:` its pattern allows).
_BARE_ID = re.compile(r"\d{4}\.\d{4,5}")
_JOINING = frozenset("（(:arxivARXIVİı")  # and the spaces (`\s`: str.isspace)
_WORDS = 60  # the most characters of words `_BEFORE_ID` takes before an id
# A paragraph that opens with the paper's id, or with a source label and the link to it.
_OPENS_WITH_ID = re.compile(
    r"^\s*(?:(?:来源|原始来源|原文|source|paper|论文)\s*[:：]\s*(?:https?://\S*?)?)?(?:arxiv\s*[: ]?\s*)?\d{4}\.\d{4,5}",
    re.IGNORECASE,
)

_VENUES = (
    r"arxiv|preprint|neurips|nips|icml|iclr|acl|emnlp|naacl|eacl|coling|cvpr|iccv|eccv|wacv|aaai|ijcai|osdi|"
    r"sosp|nsdi|eurosys|asplos|isca|micro|hpca|mlsys|sc|atc|usenix(?: atc| security)?|colm|kdd|www|sigmod|"
    r"vldb|icde|tmlr|jmlr|tpami|fast|ppopp|dac|iccad|hotos|socc|ipdps|ics|pact|pldi|interspeech|icassp|"
    r"findings(?: of)?(?: the)?(?: acl| emnlp| naacl)?|openreview|github|huggingface|hf|blog|tech report"
)
_VENUE = re.compile(
    rf"^(?:{_VENUES})(?:[\s'’-]*\d{{2,4}})?(?:\s+\(?(?:spotlight|oral|poster|workshop|findings|main|best paper|"
    r"short|long|demo|track|conference)\)?)*\.?$|^\d{4}(?:[.\-/]\d{1,2}){0,2}\.?$",
    re.IGNORECASE,
)
_PLACEHOLDER = frozenset(
    (
        *["pdf", "paper", "link", "links", "abs", "html", "code", "github", "arxiv", "huggingface", "hf", "project", "page", "website", "homepage"],
        *["here", "this", "url", "doi", "blog", "demo", "video", "slides", "poster", "tbd", "n/a", "na", "none"],
        *["原文", "论文", "论文链接", "链接", "原文链接", "地址", "代码", "主页", "논문", "링크", "원문"],
        "project page", "paper link", "arxiv link", "full text",
    )
)  # fmt: skip
_SENTENCE_START = re.compile(
    r"^(?:this (?:paper|work|study|article)|we |in this |the authors|our |these |it |they |"
    r"本文|我们|该论文|论文提出|提出|作者|이 논문|본 논문|우리는)",
    re.IGNORECASE,
)
_ET_AL = re.compile(r"\bet\.?\s?al\b|等人", re.IGNORECASE)
# A briefing's own headings read back from a baseline: `增量 2：…`, `D5：作者标注待核实：…`.
_BRIEFING_HEADING = re.compile(r"^(?:(?:主?增量|increment)\s*\d|D\d{1,6}\s*[：:])", re.IGNORECASE)
_LABEL = re.compile(
    r"^(?:原文标题|原标题|英文标题|论文标题|标题|original title|paper title|title|제목|논문 제목|원제)\s*(?:[:：]\s*)?$",
    re.IGNORECASE,
)
_TITLE_COLUMNS = (
    re.compile(r"^(?:paper )?titles?$|^标题$|^论文标题$|^题目$|^제목$|^논문 제목$", re.IGNORECASE),
    re.compile(r"^(?:papers?|论文|논문|publication)$", re.IGNORECASE),
    re.compile(r"^(?:name|method|model|名称|方法|模型|이름)$", re.IGNORECASE),
)
_NAME = re.compile(r"^(?:[A-Z][\w'’.\-]*|[A-Z]\.)$")
_CAPITAL = re.compile(r"[A-Z]")
_AUTHOR_SEPARATOR = re.compile(r",|，|、|\band\b|&")
_LABEL_NUMBER = re.compile(r"^[^:：]{1,24}[:：]\s*[\d.,%/\s]+$")  # `总论文数：13`, `Read time: 12`
# Headings of a paper's or a digest's parts, never a paper's title.
_GENERIC = frozenset(
    (
        "introduction", "related work", "abstract", "method", "methods", "results", "conclusion", "overview",
        "summary", "background", "contributions", "contribution", "discussion", "evaluation", "experiments",
        "appendix", "references", "citation", "摘要", "总结", "概述", "简介", "论文详情", "今日论文统计",
        "方法", "结论", "贡献", "요약", "개요", "결론",
    )
)  # fmt: skip
_MAX_WORDS = 30


def clean_title(text: str) -> str:
    """A candidate as a title: numbering, ids, URLs, emoji, tags, affiliations and edge punctuation removed."""
    text = " ".join(EMOJI.sub("", text).split())
    text = " ".join(_ID_NOISE.sub(" ", _NUMBERING.sub("", text)).split())
    text = _AFFILIATION.sub("", _TAG_PREFIX.sub("", _EMPTY_BRACKETS.sub("", text)))
    text = text.strip(" ：:—-·|;；,，")
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    if text[:1] in "\"'“‘《" and text[-1:] in "\"'”’》":
        text = text[1:-1]
    return text.strip()


def _author_list(text: str) -> bool:
    if _CAPITAL.search(text) is None:  # every name opens with one (`_NAME`): most findings are out at once
        return False
    parts = [p.strip(" .*") for p in _AUTHOR_SEPARATOR.split(text) if p.strip(" .*")]
    # Two names at least, and four parts in five: the first part that is no name settles most findings.
    misses = 0
    for p in parts:
        words = p.split()
        if not (2 <= len(words) <= 4 and all(_NAME.match(w) for w in words)):
            misses += 1
            if len(parts) - misses < 2 or len(parts) - misses < 0.8 * len(parts):
                return False
    names = len(parts) - misses
    return names >= 2 and names >= 0.8 * len(parts)


_DATE = re.compile(
    r"^(?:listed|published|updated|submitted|accepted|发布|发表|更新)?\s*+[:：]?\s*+\d{4}(?:[.\-/年]\d{1,2}){0,2}[.日]?$",
    re.IGNORECASE,
)
# Fields of a metadata line: ` · `, ` | `, or the end of an author list (`… Deming Chen. Arxiv 2024.`). A match
# takes a space run once, from its first space (from each: quadratic); each branch reads its first character
# before it looks behind (a lookbehind first was tried at every character: ~3 times slower, the same matches).
_FIELDS = re.compile(r"\s(?<!\s\s)\s*+[·|]\s+|\.(?<=[a-z\)]\.)\s+")


def _metadata_field(part: str) -> bool:
    # An id has a dot and a URL its `://`: a field with neither has none to blank out.
    noisy = "." in part or "://" in part
    bare = (_ID_NOISE.sub(" ", part) if noisy else part).strip(" .,;:()[]（）*_·|")
    if not bare or (low := bare.lower()) in _PLACEHOLDER or _VENUE.match(low) or _DATE.match(bare):
        return True
    return (len(bare) <= 80 and bool(_ET_AL.search(bare))) or _author_list(bare)


def is_metadata(text: str) -> bool:
    """True for a line of paper metadata: authors, a venue, a date, ids and URLs, or such fields joined with
    ` · ` (`Yike Zhang, Zhiyuan He et al. · arXiv 2508.02215 · listed 2025-08-05`); never for a finding."""
    parts = (p for p in _fields(" ".join(text.split())) if p)
    first = next(parts, None)
    return first is not None and _metadata_field(first) and all(_metadata_field(p) for p in parts)


def _fields(text: str) -> Iterator[str]:
    """`_FIELDS.split(text)`, a field at a time: a finding's first sentence settles it, the rest is not split."""
    at = 0
    for m in _FIELDS.finditer(text):
        yield text[at : m.start()]
        at = m.end()
    yield text[at:]


def _balanced(text: str) -> bool:
    pairs = (("(", ")"), ("[", "]"), ("（", "）"), ("【", "】"), ("《", "》"))
    return text.count("**") % 2 == 0 and all(text.count(a) == text.count(b) for a, b in pairs)


def plausible_title(text: str) -> bool:
    """True when `text` can be a paper's title: not a venue, author list, sentence, label or cut fragment."""
    text = " ".join(text.split())
    if not 4 <= len(text) <= 300 or not any(ch.isalpha() for ch in text):
        return False
    lowered = text.lower().strip(" .[]()*_")
    if lowered in _PLACEHOLDER or lowered in _GENERIC or _VENUE.match(lowered) or _LABEL.match(text):
        return False
    if _LABEL_NUMBER.match(text):
        return False
    if not _balanced(text) or text.endswith(
        ("[", "(", "（", "·", ",", "，", "、", "→", "-", "—", ":", "：", "…")
    ):
        return False  # a cut fragment: `Compiler for Direct CUDA Inference** · Xuanzhe Li et.al. · [`
    if " · " in text or " | " in text or "⭐" in text or "★" in text or _BRIEFING_HEADING.match(text):
        return False  # fields joined into one line, or a briefing's own heading
    if _ET_AL.search(text) or _author_list(text):
        return False
    # A contribution sentence, not a title.
    return not (_SENTENCE_START.match(text) or "。" in text or "！" in text or len(text.split()) > _MAX_WORDS)


def _candidate(arxiv_id: str, raw: str, source: str, rank: int) -> TitledId | None:
    if raw.strip(" .[]()*_").lower() in _PLACEHOLDER:
        return None  # most link texts next to a paper are `arXiv`, `[pdf]`, `HuggingFace`: no cleaning needed
    if not _balanced(raw):
        return None  # cut mid-markup or mid-bracket: `Compiler for Direct CUDA Inference** · …`
    title = clean_title(raw)
    if not plausible_title(title):
        return None
    return TitledId(id=arxiv_id, title=title, source=source, strong=rank >= _STRONG_FROM, rank=rank)


def block_ids(block: Block) -> list[str]:
    """The arXiv ids a block carries, in its text or in the URLs of its links."""
    urls = " ".join(url for _, url in block.links)
    return extract_arxiv_ids(f"{block.text} {urls}" if urls else block.text)


def title_column(header: Sequence[str]) -> int | None:
    cells = [" ".join(EMOJI.sub("", c).split()).strip(" *:：") for c in header]
    for pattern in _TITLE_COLUMNS:
        for i, cell in enumerate(cells):
            if pattern.match(cell):
                return i
    return None


def title_cell(block: Block) -> str:
    """The cell under the title column of a table row (`Title`, `Paper`, `标题` …), '' when there is none."""
    column = title_column(block.header) if block.kind == "table_row" else None
    return block.cells[column] if column is not None and column < len(block.cells) else ""


def title_line(block: Block) -> str:
    """`**原文标题：** FilmAgent: …` or `Title: …` → the title it states, '' if it is no title line."""
    if block.lead and _LABEL.match(block.lead):
        return block.text[len(block.lead) :] if block.text.startswith(block.lead) else ""
    m = re.match(
        r"^(?:原文标题|原标题|英文标题|论文标题|original title|paper title|title)\s*[:：]\s*",
        block.text,
        re.I,
    )
    return block.text[m.end() :] if m else ""


# What the compiled pass finds may title an id in one section (predigest_native, native/src/titles.rs): its
# index, level, number and heading; the raw texts offered, each with its id and source (a key of TRUST); and
# the named-paper case — the id the first block cites, that block's text, whether the heading may title it.
RawTitle = tuple[str, str, str]
NamedPaper = tuple[str, str, bool]
TitleScan = tuple[int, int, str | None, str, list[RawTitle], NamedPaper | None]


class ScannedNote(Protocol):
    """A note's reading (processors.structure.read_note) as stated_pairs uses it."""

    @property
    def title_scan(self) -> Sequence[TitleScan]: ...

    @property
    def structure(self) -> Structure: ...


def titled_ids(doc: Document) -> list[TitledId]:
    """The (id, title) pairs a document states, its text read again (a record stored without them)."""
    return stated_pairs(doc.path, doc.kind, doc.title, doc.arxiv_ids, read_note(doc.text))


def stated_pairs(
    path: str, kind: str, title: str, arxiv_ids: Sequence[str], reading: ScannedNote
) -> list[TitledId]:
    """The (id, title) pairs a note states: a card's title for its id, then each section's pairs.

    The compiled pass scans every block (`reading.title_scan`); only the texts it offers are judged here.
    """
    out: list[TitledId] = []
    if kind == "paper_card" and arxiv_ids:
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if title != stem:
            pair = _candidate(arxiv_ids[0], title, path, TRUST["card"])
            out.extend([pair] if pair else [])
    for index, level, number, heading, raws, named in reading.title_scan:
        ref = (
            path if level <= 1 else f"{path}#{number or heading}"
        )  # `path#§2.4`, `path#heading`, or the path
        pairs = [p for i, raw, source in raws if (p := _candidate(i, raw, ref, TRUST[source])) is not None]
        if not pairs and named is not None:
            pairs = _named_paper(named, heading, ref, reading, index)
        out.extend(pairs)
    return out


def _named_paper(
    named: NamedPaper, heading: str, ref: str, reading: ScannedNote, index: int
) -> list[TitledId]:
    """A section about one paper whose heading names no id but whose first block cites it: `### 2.1 InferenceBench`
    / `arXiv:2607.20468 提出 …` (or a `来源：` line linking the paper)."""
    # The heading titles the paper only when the first paragraph opens with the id and the section cites
    # nothing else: a heading over a list or a table is a category (`Notes`, `Excluded`), and a heading over a
    # paragraph that names the paper (`安全事件关联` / `Detokenization Leaks（arXiv 2609.06674）：…`) is a
    # topic: the words before the id are then the paper's name only.
    arxiv_id, text, heading_may_title = named
    name = lead_name(text, arxiv_id)
    if name:
        pair = _candidate(arxiv_id, name, ref, NAME)
    elif (
        heading_may_title
        and _OPENS_WITH_ID.match(text)
        # the section's blocks, built as Python objects only now (processors.structure.read_note)
        and section_boilerplate(reading.structure.sections[index]) is None
    ):
        pair = _candidate(arxiv_id, heading, ref, TRUST["section"])
    else:
        pair = None
    return [pair] if pair is not None else []


def lead_name(line: str, arxiv_id: str) -> str:
    """The words right before `arxiv_id` in a line (`Detokenization Leaks（arXiv 2609.06674）`), or ''."""
    bare = arxiv_id.split("v")[0]
    if bare not in line:  # cited by a link only: nothing in the text to look for
        return ""
    for m in _before_ids(line):
        if m.group(2) == bare:
            return _lead(m)
    return ""


def _before_ids(line: str) -> Iterator[re.Match[str]]:
    """`_BEFORE_ID.finditer(line)`, each search begun where its match can start at the earliest: no sooner than
    the words and joining characters before the next id (trying every character of a long paragraph took ~3 ms)."""
    pos = 0
    while found := _BARE_ID.search(line, pos):
        start = found.start()
        while start > pos and (line[start - 1] in _JOINING or line[start - 1].isspace()):
            start -= 1
        m = _BEFORE_ID.search(line, max(pos, start - _WORDS))
        if m is None:
            return
        yield m
        pos = m.end()


def lead_names(line: str) -> dict[str, str]:
    """`lead_name` of every id of the line, in one pass over it (a paragraph citing ten papers is read once)."""
    firsts: dict[str, re.Match[str]] = {}
    for m in _before_ids(line):
        firsts.setdefault(m.group(2), m)
    return {i: _lead(m) for i, m in firsts.items()}


def _lead(m: re.Match[str]) -> str:
    name = clean_title(m.group(1))
    return name if 2 <= len(name) <= 60 and not name.lower().startswith(("http", "来源")) else ""


class BestTitles:
    """The title of each id from its most trusted source (the first of equals), strong before weak; a name is no
    title. A document's pairs are added together, in any order of documents: each with its place in the window."""

    def __init__(self) -> None:
        self._best: dict[str, tuple[tuple[int, bool, int, int], str]] = {}

    def add(self, pairs: Iterable[TitledId], position: int = 0) -> None:
        for n, p in enumerate(pairs):
            self.offer(p, position, n)

    def offer(self, p: TitledId, position: int, n: int) -> None:
        """One pair: the `n`th its document states, at `position` in the window."""
        if p.rank < TITLE_FROM:
            return
        key = (-p.rank, not p.strong, position, n)
        held = self._best.get(p.id)
        if held is None or key < held[0]:
            self._best[p.id] = (key, p.title)

    def titles(self) -> dict[str, str]:
        return {i: title for i, (_, title) in self._best.items()}


@dataclass(frozen=True)
class WindowTitles:
    """The title of each id (the arXiv API's first, then the documents'), and which ids the API answered for."""

    best: dict[str, str]
    verified: dict[str, bool]


def stated_titles(doc: DocumentSummary) -> Sequence[TitledId]:
    """The pairs a document states, kept with its summary at parse time (or found now, for one without them)."""
    if doc.titled is not None:
        return doc.titled
    return titled_ids(doc) if isinstance(doc, Document) else ()


def window_titles(
    stated: BestTitles, api_titles: Mapping[str, str], window_ids: Sequence[str]
) -> WindowTitles:
    """Titles stated across the window (a typo'd id is caught wherever it sits); the API is authoritative."""
    best = stated.titles()
    best.update(api_titles)
    verified = {i: i in api_titles for i in window_ids} if api_titles else {}
    return WindowTitles(best=best, verified=verified)
