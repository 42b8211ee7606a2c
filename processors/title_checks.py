"""Is this text a paper's title? A venue, an author list, a contribution sentence or a cut fragment is not.

TODO(structure): the `structure` branch adds `plausible_title` beside the parser's true titles; once it lands,
import that one here (or from there) and delete this minimal predicate.
"""

from __future__ import annotations

import re

from processors.tokens import terms

_VENUES = (
    "neurips nips icml iclr acl emnlp naacl coling eacl aaai ijcai cvpr iccv eccv osdi sosp nsdi mlsys atc usenix "
    "eurosys asplos isca micro hpca sc kdd www sigir sigmod vldb icde tacl jmlr tmlr colm arxiv preprint fast "
    "findings workshop spotlight oral poster main conference journal track long short paper accepted submitted"
)
_VENUE_WORDS = frozenset(_VENUES.split())
_GENERIC = frozenset(
    (
        "introduction", "related work", "abstract", "method", "methods", "results", "conclusion", "overview",
        "summary", "background", "contributions", "contribution", "discussion", "evaluation", "experiments",
        "appendix", "references", "citation", "摘要", "总结", "概述", "简介", "论文详情", "今日论文统计",
        "方法", "结论", "贡献", "요약", "개요", "결론",
    )
)  # fmt: skip
_SENTENCE_START = re.compile(
    r"^(?:we|our|this (?:paper|work|study)|the authors?|it|they|proposes?|introduces?|presents?|shows?|"
    r"achieves?|uses?|reduces?|improves?|a novel|a new (?:method|approach|framework)|an approach|"
    r"提出|本文|我们|该(?:论文|工作|方法)|通过|作者|이 논문|본 논문|우리는|제안)",
    re.IGNORECASE,
)
_AUTHORS = re.compile(r"\bet\.?\s*al\b|\bet\.al\b", re.IGNORECASE)
_LABEL_NUMBER = re.compile(r"^[^:：]{1,24}[:：]\s*[\d.,%/\s]+$")
_NAME = re.compile(
    r"(?:[A-Z][\w'.-]*|van|von|de|der|da|del|la|le)(?: (?:[A-Z][\w'.-]*|van|von|de|der|da|del|la|le)){0,3}"
)
_OPENERS, _CLOSERS = "([{（【「", ")]}）】」"


def plausible_title(text: str) -> bool:
    """True when `text` can be a paper's title: not a venue (`NeurIPS 2025 Spotlight`), an author list, a
    sentence about the paper, a generic heading, a label with a number, or a fragment cut mid-markup."""
    t = re.sub(r"\s+", " ", text).strip().rstrip(".。")
    if not 6 <= len(t) <= 300 or "http" in t.lower() or t.endswith(("[", "(", "**", "·", ",", "，")):
        return False
    if (
        _AUTHORS.search(t)
        or _LABEL_NUMBER.match(t)
        or _author_list(t)
        or _SENTENCE_START.match(t)
        or "%" in t
        or t.lower() in _GENERIC
    ):
        return False
    if sum(t.count(c) for c in _OPENERS) != sum(t.count(c) for c in _CLOSERS):
        return False
    words = terms(t)
    if len(words) < 2 or len(t.split()) > 30 or t.count("。") or re.search(r"[.!?] [A-Z]", t):
        return False
    if all(w in _VENUE_WORDS or w.isdigit() or re.fullmatch(r"'?\d{2}", w) for w in words):
        return False
    return sum(c.isdigit() for c in t) <= len(t) * 0.3


def _author_list(t: str) -> bool:
    """`Zhiyu Guo, Hidetaka Kamigaito, Taro Watanabe`: names only, separated by commas or `and`."""
    parts = [p.strip() for p in re.split(r",|;| and |、", t) if p.strip()]
    return len(parts) >= 2 and all(_NAME.fullmatch(p) for p in parts)
