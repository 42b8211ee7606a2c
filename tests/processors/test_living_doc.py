import hashlib
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.documents import parse_document
from processors.living_doc import anchored_names, parse_living_doc, sections_citing
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
    assert "1️⃣ Pruning / Evicting / Sparse" in headings
    # Keycap digits number the method sections: 1️⃣ … 8️⃣ are §1 … §8.
    assert [s.number for s in living.sections if s.number] == [f"§{n}" for n in range(1, 9)]
    assert sections_citing(living, "2404.14469") == ["§1"]


def test_known_vs_new_and_sections_against_the_real_kv_cache_living_document() -> None:
    from tests.processors.notes import brief, note

    real = (CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md").read_text()
    living_doc = note("living/inference.md", real)
    snap = note(
        "inbox/jay/2026-09-27-1000-snapkv.md",
        "# KV 剪枝笔记\n\n## SnapKV 复现\narXiv:2404.14469 SnapKV 在 vLLM 推理上复现：KV cache 内存降低 3.6×，"
        "pruning / evicting 的 observation window 有效。\n",
    )
    fresh = note(
        "inbox/jay/2026-09-27-1100-new.md",
        "# 新论文\n\n## KV cache quantization 新方法\narXiv:2609.11111 提出 2-bit KV cache quantization，"
        "吞吐量提升 2.1×，精度损失 0.3%。\n",
    )
    b = brief([snap, fresh], living_doc=living_doc)
    assert b.summary.continued_arxiv == ["2404.14469"] and b.summary.new_arxiv == ["2609.11111"]
    sections = b.living_doc.sections
    assert sections["§1"] == "Pruning / Evicting / Sparse" and sections["§5"] == "Quantization"
    by_id = {i: inc for inc in b.increments for i in inc.arxiv}
    snapkv = by_id["2404.14469"]  # continued, but it brings a figure the document does not have
    assert snapkv.related_sections[0] == "§1" and snapkv.relations[0].via == "arxiv_id"
    assert "SnapKV" in snapkv.relations[0].anchored[0]
    assert "§5" in by_id["2609.11111"].suggested_sections  # a quantization paper goes to 5️⃣ Quantization


def test_a_curated_list_anchors_its_papers_by_their_link_titles() -> None:
    text = (CORPUS / "living_docs" / "October2001_Awesome-KV-Cache-Compression_README.md").read_text("utf-8")
    living = parse_living_doc(parse("living/kv.md", text))
    headings = [s.heading for s in living.sections]
    assert "Pruning / Evicting / Sparse" in " ".join(headings) and "News" in headings
    pruning = next(s for s in living.sections if s.heading.endswith("Pruning / Evicting / Sparse"))
    names = anchored_names(pruning, first=["2404.14469"])
    assert names[0] == "SnapKV"  # the link's title, cut at its colon
    assert not any(n.lower() in ("pdf", "arxiv", "neurips 2023") for n in names)
