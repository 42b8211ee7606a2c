"""The briefing's tunables (settings' `rules`): apart from the logic that reads them, so that loading the settings
does not import it (a backfill never briefs)."""

from __future__ import annotations

from pydantic import Field

from processors.models import Frozen


class RelevanceRules(Frozen):
    """Thresholds on the [0, 1] profile score; calibrated on the example root and the real corpus."""

    very_high: float = 0.45
    high: float = 0.3
    low: float = 0.1  # below this a source is "low" and yields no increment on its own
    adjacent_ratio: float = 1.5  # another axis scoring this many times higher makes a source "adjacent"


class IncrementRules(Frozen):
    """How units cluster and how increments are chosen."""

    min_count: int = 3
    max_count: int = 8
    attach_similarity: float = 0.55  # an id-less section this close to an id's sections joins them
    merge_similarity: float = 0.45  # id-less notes this close to each other are one increment
    covered_similarity: float = 0.5  # an id-less increment this close to a section is "continued"
    max_points: int = 6
    # Above min_count, a candidate scoring under this share of the window's best is left to 六, not padded in:
    # relative, because a window's scores rise and fall with its profile (a keyword-only axis, a short window).
    score_share: float = 0.5
    # Increments come from the most relevant notes; a window of 100k notes is cut to these before clustering.
    max_contributors: int = 80


class CredibilityRules(Frozen):
    """Stars per kind of source, and the domains and words that identify each kind."""

    arxiv: int = 4
    vendor: int = 3
    community: int = 3
    unknown: int = 2
    vendor_domains: tuple[str, ...] = (
        "nvidia.com", "vllm.ai", "aws.amazon.com", "cloud.google.com", "microsoft.com", "openai.com",
        "anthropic.com", "huggingface.co", "pytorch.org", "deepseek.com", "sglang.ai",
        "kubernetes.io", "cncf.io", "llm-d.ai",
    )  # fmt: skip
    community_domains: tuple[str, ...] = (
        "csdn.net", "zhihu.com", "medium.com", "substack.com", "dev.to", "juejin.cn", "x.com",
        "twitter.com", "reddit.com", "weixin.qq.com", "cnblogs.com", "51cto.com", "bilibili.com",
        "inferenceengineering.tech",
    )  # fmt: skip
    community_words: tuple[str, ...] = ("csdn", "知乎", "公众号", "博客", "blog", "substack", "掘金")


class BriefingRules(Frozen):
    """Every tunable of the briefing logic (the increment range is `increments.min_count/max_count`)."""

    relevance: RelevanceRules = RelevanceRules()
    increments: IncrementRules = IncrementRules()
    credibility: CredibilityRules = CredibilityRules()
    near_duplicate_threshold: float = Field(0.8, gt=0.0, le=1.0)
