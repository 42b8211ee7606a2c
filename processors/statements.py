"""What a block says, as a sentence an editor could quote: its plain text without labels, links or metadata.

A block of a note is a statement only when it says something besides its structure: never a link-only line
(`论文链接： HuggingFace | arXiv`, `[pdf]`), a label with nothing after it (`关键发现：`), a metadata line
(`Main category: cs.HC`, `Yike Zhang, Zhiyuan He et al. · arXiv 2508.02215 · listed 2025-08-05`), a title line
(`原文标题：…`, the unit's title), code or HTML. A leading label that introduces content (`摘要：`, `TL;DR:`)
is dropped, so is a mention of the unit's own id (`（arXiv:2507.08045）`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from processors.boilerplate import link_free_text
from processors.id_titles import clean_title, is_metadata, title_line
from processors.key_points import Said, has_digit, sentences
from processors.structure import Block

# Labels of metadata, not of findings: the block says nothing an editor would write down.
_META_LABEL = re.compile(
    r"^(?:main category|categor(?:y|ies)|subjects?|keywords?|key words|tags?|authors?|affiliations?|comments?|"
    r"journal(?: ref)?|doi|pdf|code|project(?: page)?|links?|paper links?|url|github|huggingface|venue|date|"
    r"published|listed|upvotes|#|no\.?|rank|year|time|arxiv(?: id| link)?|id|stars?|citations?|status|"
    r"关键词|关键字|分类|主分类|类别|作者|机构|标签|论文链接|原文链接|链接|代码|地址|"
    r"项目主页|发表|会议|期刊|日期|年份|时间|序号|키워드|분류|저자|링크|코드)$",
    re.IGNORECASE,
)
# Labels that only introduce what follows (`摘要：`, `TL;DR:`): dropped. Any other label (`Mooncake 分布式 KV
# 持久化：…`) says what the figures after it are about, and stays.
_INTRO_LABEL = re.compile(
    r"^(?:abstract|summary|tl;?dr|results?|conclusions?|motivation|methods?|highlights?|findings|key findings|"
    r"key contributions?|contributions?|notes?|摘要|简介|概要|要点|总结|结论|方法|动机|贡献|主要贡献|结果|亮点|"
    r"核心内容|요약|결과|초록|결론)$",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*+([^:：。.!?！？]{1,24}?)\s*[:：]\s*")  # `摘要：`, `TL;DR:`, `Result:`
_ID = r"(?:arxiv(?>\s*[: ]?\s*))?(?P<id>\d{4}\.\d{4,5})(?:v\d+)?"
_BRACKETED_ID = re.compile(rf"[（(\[]\s*{_ID}\s*[)）\]]", re.IGNORECASE)
# A source line a soft break joined to the paragraph above it: `… 2+ 小时/大型模型。 来源：https://…`.
_SOURCE_TAIL = re.compile(
    r"(?<!\s)\s*+(?:来源|原始来源|出处|source|url|链接)\s*+[:：]\s*+https?://\S++\s*$", re.IGNORECASE
)
_ID_AFTER_LABEL = re.compile(r"\d{4}\.\d{4,5}")
_LEAD_ID = re.compile(rf"^\s*+{_ID}\s*[—–:：-]?\s*", re.IGNORECASE)
# White space (what `str.isspace()` and a regex `\s` take) and separators a bullet or label leaves at either end.
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_BULLETISH = SPACES + "-—–·|:：,，;；"
_WORD = re.compile(r"\w")
_SPACE_BEFORE = re.compile(
    r"(?<!\s)\s++([:：,，;；.。])"
)  # what a dropped `(arXiv:…)` leaves: `MadaKV : By …`
MAX_STATEMENT = 4000  # characters kept of one block: a point is a sentence or two, not a page


def _drop_label(text: str) -> tuple[str, str]:
    """(label, the rest) when the text opens with a short `label：`, else ('', text)."""
    m = _LABEL.match(text)
    if m is None or "http" in m.group(1).lower() or _ID_AFTER_LABEL.match(text, m.end()):
        return "", text  # `arXiv:2609.23130 …` is an id, not a label
    return m.group(1).strip(" *_"), text[m.end() :]


def _drop_ids(text: str, ids: Sequence[str]) -> str:
    """The text without its mentions of the unit's own ids: `（arXiv:2507.08045）`, a leading `2502.03771 —`."""
    if not ids:
        return text
    own = {i.split("v")[0] for i in ids}
    if not any(i in text for i in own):
        return _SPACE_BEFORE.sub(r"\1", text)  # no mention of them to drop: the patterns' passes are skipped

    def drop(m: re.Match[str]) -> str:
        return "" if m.group("id") in own else m.group(0)

    text = _BRACKETED_ID.sub(drop, text)
    while (m := _LEAD_ID.match(text)) is not None and m.group("id") in own:
        text = text[m.end() :]  # `arXiv:1605.08386 arXiv:2609.23130 …`: each leading own id, once
    return _SPACE_BEFORE.sub(r"\1", text)


def statement(block: Block, *, title: str = "", own_ids: Sequence[str] = ()) -> str:
    """What the block states, '' when it states nothing (structure, metadata, a title, a bare label).

    `title` (the paper's title the block opens with) and the unit's `own_ids` are taken out of it.
    """
    if block.kind in ("code", "html", "heading") or not block.text:
        return ""
    if block.kind == "table_row":
        return ""  # a row's cells are read by the paper they belong to, never as one joined line
    if title_line(block) or not _WORD.search(link_free_text(block)):
        return ""  # `原文标题：…` is the title; `论文链接： [HuggingFace](…) | [arXiv](…)` says nothing
    text = block.text[:MAX_STATEMENT]
    if title:
        lead = block.lead if block.lead and clean_title(block.lead) == title else title
        if text.startswith(lead):
            text = text[len(lead) :]
    text = _drop_ids(text, own_ids)
    if "://" in text:  # the tail is a URL: the pattern tried at every character otherwise
        text = _SOURCE_TAIL.sub("", text)
    label, rest = _drop_label(text)
    if label and _META_LABEL.match(label):
        return ""
    if not _WORD.search(rest):
        return ""  # a label with nothing after it: `关键发现：`
    text = (rest if label and _INTRO_LABEL.match(label) else text).strip(_BULLETISH)
    if not _WORD.search(text) or is_metadata(text):
        return ""
    if not _WORD.search(_without_link_texts(text, block)):
        return ""  # `[pdf] [code]`, `HuggingFace | arXiv` once the label is gone
    return " ".join(text.split())


def _without_link_texts(text: str, block: Block) -> str:
    for label, _ in block.links:
        if label:
            text = text.replace(label, " ")
    return text


def cell_statement(cell: str, header: str) -> str:
    """A table cell's content as a statement: '' for metadata (authors, venue, date, links) and empty cells."""
    text = " ".join(cell.split())
    if not _WORD.search(text) or (header and _META_LABEL.match(header.strip(" *:："))) or is_metadata(text):
        return ""
    return text[:MAX_STATEMENT]


def row_statement(block: Block) -> str:
    """A table row outside any paper (a results table) as `label — header value; …`, for cells with numbers."""
    cells = [" ".join(c.split()) for c in block.cells]
    header = [*block.header, *[""] * max(0, len(cells) - len(block.header))]
    said = [f"{h} {c}".strip() for h, c in zip(header[1:], cells[1:], strict=False) if has_digit(c)]
    if not cells or not said or not _WORD.search(cells[0]):
        return ""
    return f"{cells[0]} — {'; '.join(said)}"[:MAX_STATEMENT]


def said_by(block: Block, *, title: str = "", own_ids: Sequence[str] = ()) -> list[Said]:
    """What the block says: a list item whole (a bullet is one point), a paragraph sentence by sentence."""
    said = statement(block, title=title, own_ids=own_ids)
    if not said:
        return []
    if block.kind in ("paragraph", "quote"):
        return [Said(s) for s in sentences(said) or [said]]
    return [Said(said, bullet=True)]
