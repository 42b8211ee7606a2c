"""Structure that is not content, recognised from a note's Markdown structure, each with its reason.

Navigation and back-links, badges, tables of contents, boilerplate sections (introduction, licence …),
source-spec and methodology lines, statistics lines, a writer's list of excluded items and "nothing new"
sentences. Precision first: a block is boilerplate only when its shape says so, never for a word it contains
somewhere in a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from processors.markup import EMOJI, is_internal
from processors.structure import Block, SectionNode

BoilerplateReason = Literal[
    "navigation",  # back-links, links within the note or to sibling notes
    "badge",  # shields.io-style badges and image-only blocks
    "toc",  # a table of contents
    "boilerplate_section",  # introduction, licence, contributing, usage, citation … sections
    "source_spec",  # `Source spec:`, `Sources:`, `Methodology:`, `检索范围：`, `출처:` lines
    "statistics",  # `总论文数：15`, `Total: 54`, `Read time: 7 min`, `Relevance Score: 9`
    "excluded",  # items the writer lists as excluded, skipped or filtered out
    "nothing_new",  # "no new paper today", `未发现新论文`, `새 논문 없음`
]

# Headings whose whole section is boilerplate, compared after numbering, emoji and punctuation are removed.
_BOILER_HEADINGS = (
    r"intro(?:duction)?", r"about(?: this (?:repo|repository|list))?", r"licen[cs]e", r"licensing",
    r"contributing", r"how to contribute", r"contributors?", r"contribution guide", r"usage", r"how to use",
    r"installation", r"citations?", r"cite", r"citing", r"how to cite", r"bibtex", r"acknowledge?ments?",
    r"thanks", r"star history", r"stargazers", r"news", r"changelog", r"notice", r"to ?do", r"subscribe",
    r"contact", r"related (?:lists|repos|projects)",
    "简介", "介绍", "引言", "前言", "许可", "许可证", "协议", "开源协议", "贡献", "贡献指南", "如何贡献", "使用",
    "使用方法", "用法", "引用", "致谢", "鸣谢", "更新日志", "订阅", "订阅渠道", "语音播报", "联系",
    "소개", "라이선스", "라이센스", "기여", "기여하기", "사용법", "사용 방법", "인용", "감사의 글", "구독",
)  # fmt: skip
_BOILER_HEADING = re.compile(f"^(?:{'|'.join(_BOILER_HEADINGS)})$", re.IGNORECASE)
_TOC_HEADING = re.compile(r"^(?:table of contents|contents|toc|index|目录|目錄|목차|차례)$", re.IGNORECASE)
_STATS_HEADING = re.compile(
    r"^(?:(?:今日|本期|本周)?(?:论文)?统计(?:信息|数据)?|statistics|stats|summary statistics|통계)$",
    re.IGNORECASE,
)
_EXCLUDED = re.compile(
    r"\b(?:excluded|not included|skipped|filtered out|omitted|out of scope)\b"
    r"|排除|未纳入|不纳入|剔除|筛除|未收录|제외|미포함",
    re.IGNORECASE,
)
_LABEL_END = r"\s*[:：]"
_SOURCE_SPEC = re.compile(
    r"^(?:source ?spec|sources?|data sources?|methodology|search scope|retrieval scope|"
    r"检索范围|检索方法|检索策略|数据来源|信息来源|来源|原始来源|方法论|筛选标准|"
    r"출처|검색 범위|데이터 출처|방법론)" + _LABEL_END,
    re.IGNORECASE,
)
_STATS_LINE = re.compile(
    r"^\[?\s*(?:total(?: papers)?|papers|count|read(?:ing)? time|relevance score|score|word count|"
    r"总论文数|论文数|论文总数|总数|共计|阅读时间|字数|논문 수|총 논문|총)"
    r"\s*[:：]\s*+[\d.,/ ]++\s*+(?:(?:min(?:utes)?|words|篇|个|分钟|편|개|분)\s*+)?\]?$",
    re.IGNORECASE,
)
_NOTHING_NEW = re.compile(
    r"\bno new (?:(?!and\b|or\b|with\b)[\w-]+ ){0,2}?(?:papers?|items?|entries|results|findings|updates|ids?|arxiv)\b"
    r"|\bnothing new\b"
    r"|(?:未发现|没有发现|暂无|今日无|本期无|本周无)新[^。，,.；;！!]{0,12}?(?:论文|增量|内容|条目|文章|进展)"
    r"|无新增(?:论文|内容|条目|增量)?(?=[。，,.；;！!\s]|$)"
    r"|새(?:로운)? 논문(?:이|은)? 없|신규 (?:논문 )?없음",
    re.IGNORECASE,
)
_ARROW = re.compile(r"^(?:←|⬅|↩|⤴|«|返回|back\b)", re.IGNORECASE)
_BACK_WORDS = re.compile(
    r"^(?:返回(?:顶部|目录|首页)?|回到(?:顶部|目录)|back(?: to (?:top|contents|index))?|맨 위로|목차로)$",
    re.IGNORECASE,
)
_NUMBERING = re.compile(r"^(?:§?\s*\d+(?:\.\d+)*\.?|[ivx]+\.)\s+", re.IGNORECASE)
_MAX_LEAD_IN = 120  # a lead-in that says "excluded:" is short; a long sentence is a finding
_MAX_EXCLUDED_HEADING = 40


def _heading_key(heading: str) -> str:
    text = _NUMBERING.sub("", EMOJI.sub("", heading).replace("\u20e3", ""))
    return " ".join(re.sub(r"[^\w\s]", " ", text).split()).lower()


def link_free_text(block: Block) -> str:
    """The block's text without the text of its links: what it says besides linking."""
    text = block.text
    for label, _ in block.links:
        if label:
            text = text.replace(label, " ", 1)
    return text


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _is_navigation(block: Block) -> bool:
    links = [url for _, url in block.links if url]
    internal = bool(links) and all(is_internal(u) for u in links)
    if internal and not _has_words(link_free_text(block)):
        return True  # `[[Back]](#toc)`, `[← Daily summary](../2026-08-04.md) · [Relationship graph](g.md)`
    if len(block.text) > 80:
        return False
    bare = block.text.strip(" []()（）【】↑⬆^·|").strip()
    # `返回目录`, `Back to top`; or `← back to [the digest](../x.md)`: an arrow or "back" leading to the note's own.
    return bool(_BACK_WORDS.match(bare)) or (internal and bool(_ARROW.match(block.text)))


def _is_badge(block: Block) -> bool:
    # Badges are images inside links with no text of their own: the block says nothing besides them.
    return bool(block.images) and block.kind != "code" and not _has_words(block.text)


def _is_toc_item(block: Block) -> bool:
    links = [url for _, url in block.links if url]
    return (
        block.kind == "list_item"
        and bool(links)
        and all(u.startswith("#") for u in links)
        and not _has_words(link_free_text(block))
    )


def _says_excluded(text: str) -> bool:
    return len(text) <= _MAX_LEAD_IN and bool(_EXCLUDED.search(text))


def _own_reason(block: Block) -> BoilerplateReason | None:
    """What the block is by its own shape and words, without looking at its neighbours."""
    if block.kind == "code":
        return None
    if _is_toc_item(block):
        return "toc"
    if _is_navigation(block):
        return "navigation"
    if _is_badge(block):
        return "badge"
    text = block.text
    if _SOURCE_SPEC.match(text):
        return "source_spec"
    if len(text) <= 80 and _STATS_LINE.match(text):
        return "statistics"
    if len(text) <= 160 and _NOTHING_NEW.search(text):
        return "nothing_new"
    if block.lead and _says_excluded(block.lead) and block.kind in ("paragraph", "list_item", "quote"):
        return "excluded"  # `**Excluded:** A, B, C`
    return None


def section_boilerplate(
    section: SectionNode, reasons: Sequence[BoilerplateReason | None] | None = None
) -> BoilerplateReason | None:
    """Why a whole section is boilerplate (its heading, or every block in it), None when it is content.

    `reasons` are the section's `block_reasons(section, whole=False)` when the caller has them already."""
    key = _heading_key(section.heading)
    if key:
        if _TOC_HEADING.match(key):
            return "toc"
        if _BOILER_HEADING.match(key):
            return "boilerplate_section"
        if _STATS_HEADING.match(key):
            return "statistics"
        if len(section.heading) <= _MAX_EXCLUDED_HEADING and _EXCLUDED.search(section.heading):
            return "excluded"  # `Excluded papers`, `未纳入的论文`; not a long heading that mentions exclusion
    if reasons is None:
        reasons = block_reasons(section, whole=False)
    said = [(b, r) for b, r in zip(section.blocks, reasons, strict=True) if _says(b)]
    found = [r for _, r in said if r is not None]
    if said and len(found) == len(said):
        return max(set(found), key=found.count)
    return None


def _says(block: Block) -> bool:
    """Code, and wrappers with no words, links or images (`<div align="center">`), say nothing either way."""
    return block.kind != "code" and bool(_has_words(block.text) or block.links or block.images)


def block_reasons(section: SectionNode, *, whole: bool = True) -> list[BoilerplateReason | None]:
    """The reason each block of the section is boilerplate (None for content), in one pass.

    A list or table that follows a short lead-in saying "excluded"/"排除" (or sits under such an item) is the
    writer's list of excluded items; with `whole`, a boilerplate section makes every block boilerplate.
    """
    if whole:
        reason = section_boilerplate(section)
        if reason is not None:
            return [reason] * len(section.blocks)
    out: list[BoilerplateReason | None] = []
    lead_in_excludes = False  # the paragraph right before the current list or table said "excluded"
    parents: list[bool] = []  # per list depth: does the item at that depth say "excluded"
    for block in section.blocks:
        reason = _own_reason(block)
        if block.kind in ("list_item", "table_row"):
            depth = block.depth if block.kind == "list_item" else 0
            del parents[depth:]
            inherited = lead_in_excludes or any(parents)
            if reason is None and inherited:
                reason = "excluded"
            if block.kind == "list_item":
                parents.append(
                    _says_excluded(block.lead or block.text) and block.text.rstrip().endswith((":", "："))
                )
        elif block.kind in ("paragraph", "quote", "heading"):
            lead_in_excludes = _says_excluded(block.text) and (
                block.text.rstrip().endswith((":", "："))
                or block.kind == "heading"
                or _says_excluded(block.lead)
            )
            parents.clear()
        out.append(reason)
    return out
