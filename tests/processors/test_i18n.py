"""lang=en: every label and reason the briefing adds is English, in the Markdown and in the JSON.

Document text (titles, headings, paths, key points quoted from notes) stays as written, so the briefings are
made from documents whose CJK was replaced by Latin letters: then any CJK left in the output is ours.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from processors.i18n import LABELS, PHRASES, RELEVANCE
from processors.models import Briefing, Document, NoIncrementSource, Rejection
from processors.reasons import NO_INCREMENT_CODES, REJECTION_CODES
from processors.render_markdown import render_markdown
from tests.processors.notes import EXAMPLE_ROOT, SH, brief, note

CORPUS = Path(__file__).parents[1] / "corpus"
# Ideographs, kana, hangul, CJK symbols and punctuation, full-width forms.
CJK = re.compile(
    "[\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3200-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
)


def latin(text: str) -> str:
    """The text with full-width forms folded to ASCII and every other CJK character replaced by a letter."""
    folded = unicodedata.normalize("NFKC", text)
    return CJK.sub(lambda m: chr(ord("a") + ord(m.group()) % 26), folded)


def latin_note(path: str, text: str) -> Document:
    return note(path, latin(text))


def assert_no_cjk(b: Briefing) -> None:
    text = render_markdown(b, lang="en", zone=SH)
    found = {m.group() for m in CJK.finditer(text)}
    assert not found, [line for line in text.splitlines() if CJK.search(line)][:10]
    data = b.model_dump_json(by_alias=True)
    assert not CJK.search(data), sorted({m.group() for m in CJK.finditer(data)})


def test_every_english_phrase_and_label_is_free_of_cjk() -> None:
    for key, texts in PHRASES.items():
        assert set(texts) == {"zh", "en"} and not CJK.search(texts["en"]), key
    assert set(LABELS["zh"]) == set(LABELS["en"])
    assert not [k for k, v in LABELS["en"].items() if CJK.search(v)]
    assert not [c for c, texts in RELEVANCE.items() if CJK.search(texts["en"])]


def test_every_reason_code_has_display_text_in_each_language() -> None:
    for lang in ("zh", "en"):
        assert all(f"g.{code}" in LABELS[lang] for code in NO_INCREMENT_CODES)
        assert all(f"reject.{code}" in LABELS[lang] for code in REJECTION_CODES)


def test_an_en_briefing_of_the_example_root_has_no_cjk_outside_document_text() -> None:
    docs = [
        latin_note(p.relative_to(EXAMPLE_ROOT).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(EXAMPLE_ROOT.rglob("*.md"))
        if p.parent.name != "living"
    ]
    living = latin_note(
        "living/inference.md", (EXAMPLE_ROOT / "living/inference.md").read_text(encoding="utf-8")
    )
    b = brief(docs, living_doc=living, lang="en")
    # The briefing exercises the labels and reasons that matter: roles, relevance, D-items, 六's groups.
    assert b.increments and b.discrepancies and b.priorities
    assert {s.relevance.code for s in b.sources} >= {"very_high", "baseline", "reference", "adjacent"}
    assert {n.code for n in b.no_increment_sources} >= {"baseline", "reference", "adjacent", "duplicate"}
    rejected = [Rejection(path="inbox/jay/2026-09-27-bin.md", reason="x: binary", reason_code="binary")]
    assert_no_cjk(b.model_copy(update={"rejected": rejected}))


@pytest.mark.parametrize(("day", "has_ids"), [("2025-01-09", False), ("2025-01-22", True)])
def test_an_en_briefing_of_a_real_newsletter_has_no_cjk_outside_document_text(
    day: str, has_ids: bool
) -> None:
    digests = CORPUS / "daily_digests/zh_hf_2404589803"
    final = (digests / f"final/{day}_daily_paper.md").read_text(encoding="utf-8")
    revision = next((digests / "revisions").glob(f"{day}_daily_paper@*.md"), None)
    curated = (CORPUS / "living_docs/October2001_Awesome-KV-Cache-Compression_README.md").read_text(
        encoding="utf-8"
    )
    docs = [latin_note("inbox/tom/2026-09-27-0900-hf-daily.md", final)]
    if revision is not None:  # an earlier revision of the same day: a near-duplicate
        docs.append(
            latin_note("inbox/jay/2026-09-27-1000-hf-daily-repost.md", revision.read_text(encoding="utf-8"))
        )
    b = brief(docs, living_doc=latin_note("living/inference.md", curated), lang="en")
    assert b.sources and bool(b.arxiv) == has_ids and b.no_increment_sources
    assert_no_cjk(b)


def test_the_zh_briefing_keeps_its_chinese_labels() -> None:
    b = brief([note("inbox/tom/2026-09-26-inference-e1prep.md", "# inference · E1\n")])
    assert b.sources[0].relevance.label == "基线"
    assert "## 六、本次无显著新增量的来源说明" in render_markdown(b, zone=SH)
    assert NoIncrementSource.model_fields["code"].is_required()
