import hashlib
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.documents import parse_document
from processors.living_doc import parse_living_doc, sections_citing
from processors.models import Document, RawFile

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

LIVING = """# inference.md v3.44
intro cites 2601.00001
## §3 Methods
### §3.3 Cache Compression
SnapKV arXiv:2404.14469v2 and https://arxiv.org/abs/2306.14048
### §3.4 Quantization
KIVI 2402.02750, again 2404.14469
## Unnumbered notes
hep-th/9901001
"""


def parse(path: str, text: str) -> Document:
    data = text.encode("utf-8")
    raw = RawFile(
        path=path,
        content=data,
        size=len(data),
        mtime=datetime(2026, 9, 26, tzinfo=UTC).timestamp(),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return parse_document(raw, zone=ZoneInfo("Asia/Shanghai"))


def test_living_doc_name_version_and_sections() -> None:
    living = parse_living_doc(parse("living/inference.md", LIVING))
    assert living.name == "inference"
    assert living.version == "v3.44"
    assert [s.number for s in living.sections] == [None, "§3", "§3.3", "§3.4", None]
    assert living.sections[2].arxiv_ids == ("2404.14469", "2306.14048")
    assert living.cited_ids == {
        "2601.00001", "2404.14469", "2306.14048", "2402.02750", "hep-th/9901001",
    }  # fmt: skip


def test_sections_citing_uses_numbers_then_headings() -> None:
    living = parse_living_doc(parse("living/inference.md", LIVING))
    assert sections_citing(living, "2404.14469v1") == ["§3.3", "§3.4"]
    assert sections_citing(living, "hep-th/9901001") == ["Unnumbered notes"]
    assert sections_citing(living, "2601.00001") == ["inference.md v3.44"]
    assert sections_citing(living, "2609.99999") == []


def test_real_awesome_readme() -> None:
    path = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
    living = parse_living_doc(parse("living/kv-cache.md", path.read_text(encoding="utf-8")))
    assert living.version is None
    assert len(living.cited_ids) >= 150
    headings = [s.heading for s in living.sections]
    assert "Pruning / Evicting / Sparse" in headings
    # Keycaps decorate the method headings: no § number, the label is the cleaned title, printed once.
    assert not any(s.number for s in living.sections)
    assert [s.label for s in living.sections if s.placeable] == [
        "Survey", "Pruning / Evicting / Sparse", "Merging", "Cross-Layer", "Low-Rank", "Quantization",
        "Prompt Compression", "Reuse", "Non-Autoregressive", "Evaluation",
    ]  # fmt: skip
    assert sections_citing(living, "2404.14469") == ["Pruning / Evicting / Sparse"]


def test_the_real_lists_boilerplate_is_no_place() -> None:
    path = CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md"
    living = parse_living_doc(parse("living/kv-cache.md", path.read_text(encoding="utf-8")))
    reasons = {s.label: s.boilerplate for s in living.sections}
    assert reasons[""] == "badge"  # the logo and the badge row
    assert reasons["News"] == reasons["Notice"] == "boilerplate_section"
    assert reasons["Project"] == "boilerplate_section"  # kvpress, KVCache-Factory: repositories, no paper
    assert reasons["Survey"] is None and reasons["Evaluation"] is None
    method = next(s for s in living.sections if s.label == "Method")
    assert method.boilerplate is None and not method.placeable  # its papers are all in its sub-sections


def test_labels_of_a_list_without_numbers() -> None:
    text = (
        "# Awesome\n## 📖Systems ([©️back👆🏻](#paperlist))\n### Papers\n- [**A: B**](https://arxiv.org/abs/2401.00001)\n"
        "## 📖Kernels ([©️back👆🏻](#paperlist))\n### Papers\n- [**C: D**](https://arxiv.org/abs/2401.00002)\n"
        "## 3.3 Cache compression\n- [**E: F**](https://arxiv.org/abs/2401.00003)\n"
    )
    living = parse_living_doc(parse("living/x.md", text))
    assert [s.label for s in living.sections] == [
        "Awesome", "Systems", "Systems › Papers", "Kernels", "Kernels › Papers", "§3.3",
    ]  # fmt: skip
    assert [s.title for s in living.sections][-1] == "Cache compression"


def test_front_matter_version() -> None:
    living = parse_living_doc(parse("living/risk.md", "---\nversion: v2.1\n---\n# risk\n## §1 Attacks\nx\n"))
    assert living.version == "v2.1" and living.sections[-1].label == "§1"


def test_what_a_section_lists_is_its_papers_titles() -> None:
    text = (CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md").read_text("utf-8")
    living = parse_living_doc(parse("living/kv.md", text))
    pruning = next(s for s in living.sections if s.label == "Pruning / Evicting / Sparse")
    assert len(pruning.items) == 95
    assert pruning.items[1].title == "SnapKV: LLM Knows What You are Looking for Before Generation"
    assert pruning.items[1].ids == ("2404.14469",)
    assert not any("et al" in i.title or i.title.startswith("Arxiv") for i in pruning.items)
    prose = parse_living_doc(parse("living/inference.md", LIVING))
    assert [i.title for i in prose.sections[2].items] == ["SnapKV"]  # the words before its id
