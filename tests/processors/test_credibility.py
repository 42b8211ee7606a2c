from processors.briefing_rules import CredibilityRules
from processors.credibility import assess

RULES = CredibilityRules()


def _stars(**kw: object) -> int:
    base: dict[str, object] = dict(
        ids=[], urls=[], titles=[], supporting_docs=1, flagged=False, verified=None, rules=RULES, lang="zh"
    )
    base.update(kw)
    return assess(**base).stars  # type: ignore[arg-type]


def test_an_arxiv_paper_outranks_a_community_blog() -> None:
    assert _stars(ids=["2609.23130"]) == 4
    assert _stars(urls=["https://blog.csdn.net/x/article/1"]) == 3
    assert _stars(titles=["CSDN 推理工程化"]) == 3
    assert _stars() == 2


def test_agreement_raises_the_stars_and_a_flagged_claim_is_noted() -> None:
    assert _stars(ids=["2609.23130"], supporting_docs=3) == 5
    flagged = assess(ids=[], urls=["https://blog.csdn.net/x"], titles=[], supporting_docs=1, flagged=True,
                     verified=None, rules=RULES, lang="zh")  # fmt: skip
    assert (flagged.stars, flagged.text) == (3, "★★★ — 技术社区博客；含待核实说法⚠")


def test_the_rules_are_configurable_and_the_text_says_why() -> None:
    strict = CredibilityRules(arxiv=3)
    result = assess(
        ids=["2607.20468"],
        urls=[],
        titles=[],
        supporting_docs=1,
        flagged=False,
        verified=False,
        rules=strict,
        lang="en",
    )
    assert result.stars == 3
    assert result.text == "★★★ — arXiv 2026-07; not verified against the arXiv API"
