from pathlib import Path

import pytest

from processors import arxiv_ids
from processors.arxiv_ids import (
    arxiv_id_from_card_name,
    card_number_from_name,
    extract_arxiv_ids,
    is_valid_arxiv_id,
    strip_version,
    yymm,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_all_documented_forms_are_found_and_normalised() -> None:
    text = (
        "see arXiv:2609.23130 and arXiv 2609.23131v1, https://arxiv.org/abs/2609.23132v1, "
        "https://arxiv.org/html/2609.23133, https://arxiv.org/pdf/2609.23134v2\n"
        "| 2609.23135 | KV |\n2605.01604 七大趋势\nold: hep-th/9901001 and arXiv:hep-th/9901002v2"
    )
    assert extract_arxiv_ids(text) == [
        "2609.23130", "2609.23131", "2609.23132", "2609.23133", "2609.23134",
        "2609.23135", "2605.01604", "hep-th/9901001", "hep-th/9901002",
    ]  # fmt: skip


def test_ids_are_unique_in_order_of_first_appearance() -> None:
    assert extract_arxiv_ids("2609.00002 then 2609.00001v2 then arXiv:2609.00002v3") == [
        "2609.00002",
        "2609.00001",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "2613.12345",  # month 13
        "2600.12345",  # month 00
        "1501.1234",  # 4 digits after 1412
        "1412.12345",  # 5 digits before 1501
        "vLLM 0.30.0 and 3.44",
        "host 10.1234.5678.1",
        "speedup 12.5% and 1.7%",
        "2024.09.26",
        "12609.23130",
        "2609.231301",
        "v2609.23130",
        "1.2609.23130",
        "2609.23130.5",
        "foo/9901001",
        "hep-th/9913001",  # month 13
    ],
)
def test_non_ids_are_rejected(text: str) -> None:
    assert extract_arxiv_ids(text) == []


def test_subject_class_old_style_ids_normalise_to_archive() -> None:
    assert extract_arxiv_ids("math.AG/0601001v1") == ["math/0601001"]


def test_id_followed_by_sentence_dot_is_found() -> None:
    assert extract_arxiv_ids("Paper 2609.23130.") == ["2609.23130"]


@pytest.mark.parametrize(
    ("candidate", "ok"),
    [
        ("0706.0001", True),
        ("0706.0001v2", True),
        ("arXiv:1501.00001v1", True),
        ("1412.9999", True),
        ("0703.0001", False),  # new scheme starts at 0704
        ("1501.1234", False),
        ("2613.12345", False),
        ("hep-th/9901001v2", True),
        ("quant-ph/0703001", True),
        ("quant-ph/0704001", False),
        ("", False),
        ("3.44", False),
    ],
)
def test_is_valid_arxiv_id(candidate: str, ok: bool) -> None:
    assert is_valid_arxiv_id(candidate) is ok


def test_strip_version_and_yymm() -> None:
    assert strip_version("2609.23130v12") == "2609.23130"
    assert strip_version("arXiv:hep-th/9901001v2") == "hep-th/9901001"
    assert yymm("2609.23130v1") == (2026, 9)
    assert yymm("hep-th/9901001") is None
    assert yymm("2613.12345") is None


def test_card_names() -> None:
    assert arxiv_id_from_card_name("1417-2609-19969.md") == "2609.19969"
    assert arxiv_id_from_card_name("paper_cards/1417-2609-19969.md") == "2609.19969"
    assert card_number_from_name("paper_cards/1417-2609-19969.md") == "1417"
    assert arxiv_id_from_card_name("1417-2613-19969.md") is None
    assert arxiv_id_from_card_name("notes.md") is None
    assert card_number_from_name("notes.md") is None


def test_identifier_spec_examples() -> None:
    path = CORPUS / "arxiv_api" / "arxiv-docs_specs" / "arxiv_identifier.md"
    ids = extract_arxiv_ids(path.read_text(encoding="utf-8"))
    assert ids[:2] == ["1501.00001", "0706.0001"]
    assert all(is_valid_arxiv_id(i) for i in ids)
    # "arch-ive/YYMMNNNN" and "math.GT" in the prose are not ids.
    assert not any("/" in i for i in ids)


def test_real_living_readme() -> None:
    path = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
    ids = extract_arxiv_ids(path.read_text(encoding="utf-8"))
    assert len(ids) >= 150
    assert len(ids) == len(set(ids))
    assert all(is_valid_arxiv_id(i) for i in ids)
    assert ids[0] == "2407.18003"


def test_whole_notes_are_not_kept_alive_by_the_id_cache() -> None:
    # The parse processes see every note once: caching whole notes grew each of them by ~20 KiB per note.
    arxiv_ids._extract_cached.cache_clear()  # a full cache would not grow by one below
    before = arxiv_ids._extract_cached.cache_info().currsize
    note = "推理 " * 3000 + " arXiv:2609.23130"
    assert extract_arxiv_ids(note) == ["2609.23130"]
    assert arxiv_ids._extract_cached.cache_info().currsize == before
    assert extract_arxiv_ids("a section only this test writes: arXiv:2609.23130v2") == ["2609.23130"]
    assert arxiv_ids._extract_cached.cache_info().currsize == before + 1


@pytest.mark.parametrize("script", ["上提供", "で説明", "에서"])
def test_an_arxiv_url_ends_where_any_cjk_script_begins(script: str) -> None:
    from processors.units import urls_in

    text = f"见 https://arxiv.org/abs/2401.12345{script}。"
    assert urls_in(text) == ["https://arxiv.org/abs/2401.12345"]
