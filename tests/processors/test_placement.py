"""Placement: a paper goes into the living-document section its own text and ids say, or plainly nowhere."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from processors.living_doc import LivingDoc, parse_living_doc
from processors.models import Briefing
from processors.placement import PlacementQuery, join_labels, place, section_index, stems, write_action
from processors.render_markdown import render_markdown
from processors.tokens import CJK, terms
from tests.processors.notes import SH, brief, example_documents, note

CORPUS = Path(__file__).parents[1] / "corpus"
KV_LIST = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
RECORDS = CORPUS / "arxiv_metadata" / "zl-asica_llm_inference_subset.jsonl"


@cache
def records() -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in map(json.loads, RECORDS.read_text(encoding="utf-8").splitlines())}


@cache
def kv_list() -> LivingDoc:
    return parse_living_doc(note("living/inference.md", KV_LIST.read_text(encoding="utf-8")))


def paper_note(arxiv_id: str) -> str:
    """A writer's note on one real paper: its title and the abstract's sentences with figures."""
    r = records()[arxiv_id]
    sentences = [s.strip() for s in " ".join(r["summary"].split()).split(". ")]
    points = [s for s in sentences if any(c.isdigit() for c in s)][:2] or sentences[:1]
    body = "\n".join(f"- {p.rstrip('.')}." for p in points)
    return f"# 今日论文\n\n## {r['title']}\narXiv:{arxiv_id} {r['title']}\n{body}\n"


def briefed(*ids: str, lang: str = "zh") -> Briefing:
    living = note("living/inference.md", KV_LIST.read_text(encoding="utf-8"))
    notes = [note(f"inbox/jay/2026-09-27-10{n}0-paper.md", paper_note(i)) for n, i in enumerate(ids)]
    return brief(notes, living_doc=living, lang=lang, increment_range=(1, 8))  # type: ignore[arg-type]


def by_id(b: Briefing) -> dict[str, object]:
    return {i: inc for inc in b.increments for i in inc.arxiv}


def test_an_eviction_paper_goes_into_pruning_evicting_sparse() -> None:
    assert "Eviction" in records()["2505.20334"]["title"]  # Lookahead Q-Cache, not in the list yet
    assert "2505.20334" not in kv_list().cited_ids
    inc = briefed("2505.20334").increments[0]
    assert inc.suggested_sections == ["Pruning / Evicting / Sparse"]
    assert inc.suggestions[0].title == "Pruning / Evicting / Sparse" and inc.suggestions[0].via == "text"
    (rel,) = inc.relations
    assert rel.section == "Pruning / Evicting / Sparse" and 1 <= len(rel.anchored) <= 6
    # What the section already anchors: titles of its papers, never authors, venues or badges.
    assert not any("et al" in n or n.startswith(("Arxiv", "NeurIPS", "GitHub")) for n in rel.anchored)
    assert inc.unplaced_reason is None


def test_a_quantization_paper_goes_into_quantization() -> None:
    inc = briefed("2505.10938").increments[0]  # Accurate KV Cache Quantization with Outlier Tokens Tracing
    assert inc.suggested_sections == ["Quantization"]


def test_a_speculative_decoding_paper_fits_no_section_and_the_briefing_says_so() -> None:
    assert not any("specul" in s.title.lower() or "decod" in s.title.lower() for s in kv_list().sections)
    b = briefed("2402.12374")  # Sequoia: Scalable, Robust, and Hardware-aware Speculative Decoding
    inc = b.increments[0]
    assert inc.suggested_sections == [] and inc.suggestions == []
    assert inc.unplaced_reason == "no_section_fits"
    assert b.model_dump(mode="json")["increments"][0]["unplaced_reason"] == "no_section_fits"
    zh = render_markdown(b, lang="zh", zone=SH)
    assert "- 建议归入章节：无合适章节（建议新增）" in zh and "TBD" not in zh and "待定" not in zh
    assert "| 无合适章节（建议新增） |" in zh  # 七's action
    en = render_markdown(briefed("2402.12374", lang="en"), lang="en", zone=SH)
    assert "- Suggested sections: no section fits (consider a new one)" in en
    assert "| no section fits (consider a new one) |" in en


def test_a_section_label_prints_once_and_clean() -> None:
    b = briefed("2505.20334", "2505.10938")
    text = render_markdown(b, lang="zh", zone=SH)
    assert "  - Pruning / Evicting / Sparse（" in text and "  - Quantization（" in text
    assert "Pruning / Evicting / Sparse 已锚定 " in text
    for doubled in ("Survey Survey", "Quantization Quantization", "Sparse Pruning", "1️⃣", "§1"):
        assert doubled not in text
    assert "写入 Pruning / Evicting / Sparse" in text or "写入 Quantization" in text
    assert b.living_doc.sections["Quantization"] == "Quantization"


def test_boilerplate_sections_are_never_suggested_nor_related() -> None:
    living = kv_list()
    boiler = {s.label for s in living.sections if s.boilerplate is not None}
    assert boiler == {"", "News", "Notice", "Project"}
    for r in records().values():
        placed = place(living, PlacementQuery(r["title"], (r["summary"][:300],), (r["id"],), ()))
        assert not {s.section for s in placed.suggestions} & boiler, r["title"]
        assert not {x.section for x in placed.relations} & boiler, r["title"]


def test_a_card_anchored_into_a_boilerplate_section_is_not_written_there() -> None:
    card = note(
        "paper_cards/1500-2412-16187.md",
        '---\narxiv: "2412.16187"\ntitle: "HashEvict"\nanchors: {inference: ["News", "Quantization"]}\n---\n'
        "# HashEvict\n- KV cache eviction with locality-sensitive hashing: 30–70% memory saved\n",
    )
    b = brief(
        [card], living_doc=note("living/inference.md", KV_LIST.read_text("utf-8")), increment_range=(1, 8)
    )
    inc = b.increments[0]
    assert inc.suggested_sections[0] == "Quantization" and inc.suggestions[0].via == "anchor"
    assert "News" not in inc.suggested_sections


def test_the_ids_a_section_cites_place_a_continued_paper_and_lead_what_it_anchors() -> None:
    living = kv_list()
    q = PlacementQuery("SnapKV", ("SnapKV 复现：KV cache 内存降低 3.6×",), ("2404.14469",), ())
    placed = place(living, q)
    assert placed.suggestions[0].section == "Pruning / Evicting / Sparse"
    assert placed.suggestions[0].via == "arxiv_id"
    assert placed.relations[0].via == "arxiv_id" and placed.relations[0].anchored[0] == "SnapKV"


def test_a_heading_alone_is_enough_and_a_parent_of_papers_is_no_place() -> None:
    text = (
        "# Notes\n## Methods\n### Pruning\n"
        "- [**SnapKV: LLM Knows What You are Looking for Before Generation**](https://arxiv.org/abs/2404.14469)\n"
        "- [**H2O: Heavy-Hitter Oracle for Efficient Generative Inference of LLMs**](https://arxiv.org/abs/2306.14048)\n"
        "### Quantization\n"  # a leaf with nothing under it yet
        "## Surveys\n"
        "- [**A Survey on Large Language Model Acceleration based on KV Cache Management**](https://arxiv.org/abs/2412.19442)\n"
        "- [**Prompt Compression for Large Language Models: A Survey**](https://arxiv.org/abs/2410.12388)\n"
        "### Older surveys\n"
        "- [**Keep the Cost Down: A Review on Methods to Optimize LLM' s KV-Cache Consumption**](https://arxiv.org/abs/2407.18003)\n"
    )
    living = parse_living_doc(note("living/x.md", text))
    placeable = [s.label for s in living.sections if s.placeable]
    assert placeable == ["Pruning", "Quantization", "Surveys", "Older surveys"]  # not Methods, not Notes
    title = records()["2505.10938"]["title"]  # Accurate KV Cache Quantization with Outlier Tokens Tracing
    placed = place(living, PlacementQuery(title, (), (), ()))
    assert [s.section for s in placed.suggestions] == ["Quantization"]


def test_without_a_living_document_nothing_is_placed_and_it_says_why() -> None:
    placed = place(None, PlacementQuery("HashEvict", (), ("2412.16187",), ()))
    assert placed.suggestions == [] and placed.unplaced == "no_living_document"
    assert write_action([], placed.unplaced, "zh") == "写入（章节待定）"
    assert write_action([], "no_section_fits", "en") == "no section fits (consider a new one)"


def test_labels_are_joined_so_that_titles_stay_readable() -> None:
    assert join_labels(["§3.3", "§3.6"]) == "§3.3/§3.6"
    assert (
        join_labels(["Pruning / Evicting / Sparse", "Merging"], "en")
        == "Pruning / Evicting / Sparse; Merging"
    )


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Detokenization Leaks：共享后端推理的侧信道攻击，加密通信无法防御", "§3.8"),
        ("DeepSeek-V4.1-Flash: Pushing the Limits of KV Cache Compression", "§3.3"),
    ],
)
def test_a_numbered_living_document_still_places_by_its_sections(text: str, label: str) -> None:
    living_doc = next(d for d in example_documents() if d.path == "living/inference.md")
    living = parse_living_doc(living_doc)
    assert living.version == "v3.44"
    assert section_index(living).fitting(text, ()) == next(s for s in living.sections if s.label == label)


def test_the_compiled_stemmer_stems_every_real_word_as_the_pure_python_snowball_does() -> None:
    # Placement stems with whatever `snowballstemmer.stemmer` returns: PyStemmer's C stemmer when installed.
    # Another stem for one word could move an increment into another section.
    from snowballstemmer.english_stemmer import EnglishStemmer

    reference, cjk = EnglishStemmer(), re.compile(f"[{CJK}]")
    files = [*CORPUS.rglob("*.md"), *CORPUS.rglob("*.jsonl"), *CORPUS.rglob("*.xml")]
    words = sorted({t for p in files for t in terms(p.read_text(encoding="utf-8", errors="replace"))})
    assert len(words) > 10_000
    text = "\n".join(words)
    assert list(stems(text)) == [w if cjk.search(w) else reference.stemWord(w) for w in words]
