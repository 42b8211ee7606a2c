"""Small real notes for processor tests: Markdown text parsed by the real parser."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.axes import assign_axes
from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingHistory, BriefingRequest, max_d_number
from processors.briefing_rules import BriefingRules
from processors.documents import parse_document
from processors.i18n import Lang
from processors.models import AxisSpec, Briefing, Document, DocumentSummary, RawFile, Rejection, Trigger
from processors.window import window_bounds

SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
WINDOW = window_bounds(END, timedelta(hours=24))
EXAMPLE_ROOT = Path(__file__).resolve().parents[2] / "examples" / "root"
AXES = (
    AxisSpec(
        name="inference",
        keywords=("inference", "推理", "vLLM", "SGLang", "KV cache", "TTFT", "serving", "speculative"),
        living_doc="living/inference.md",
    ),
    AxisSpec(name="llm-infra", keywords=("GPU", "cluster", "training", "Kubernetes", "基础设施")),
    AxisSpec(name="risk", keywords=("security", "attack", "安全", "攻击", "风险")),
    AxisSpec(name="llm-application", keywords=("agent", "RAG", "LangGraph", "应用")),
)
INFERENCE = AXES[0]

LIVING = """# inference.md v3.44

## §1 推理框架

### §1.1 框架格局
vLLM v0.30.0 / SGLang v0.5.20 / TensorRT-LLM v1.2.1；推理引擎吞吐与部署。

### §1.5 推理可靠性与可观测性
SWE-Serve（arXiv:2509.15000）推理 Serving 工程基准。

## §3 KV Cache

### §3.3 Cache Compression
KVTC（arXiv:2511.01815，20× 压缩）/ GEAR（arXiv 2403.05527）KV cache 压缩与量化。

### §3.8 KV Cache 安全新维度
Shadow in the Cache（arXiv:2508.09442）KV cache 侧信道与泄露攻击。

## §4 解码

### §4.1 投机解码
EAGLE / Medusa 投机解码 speculative decoding 加速。
"""


def note(path: str, text: str, mtime: datetime | None = None) -> Document:
    data = text.encode("utf-8")
    raw = RawFile(
        path=path,
        content=data,
        size=len(data),
        mtime=(mtime or datetime(2026, 9, 27, tzinfo=UTC)).timestamp(),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return parse_document(raw, zone=SH)


def living(text: str = LIVING) -> Document:
    return note("living/inference.md", text)


def brief(
    docs: Sequence[DocumentSummary],
    *,
    living_doc: Document | None = None,
    lang: Lang = "zh",
    earlier: Sequence[str] = (),
    last_d: int | None = None,
    increment_range: tuple[int, int] = (3, 8),
    rules: BriefingRules | None = None,
    superseded: Sequence[Document] = (),
    load: Callable[[Sequence[str]], Sequence[Document]] | None = None,
    axis: AxisSpec = INFERENCE,
    history: BriefingHistory | None = None,
    end: datetime = END,
    trigger: Trigger = "close",
    between_reads: Callable[[], None] = lambda: None,
    rejected: Sequence[Rejection] = (),
) -> Briefing:
    baseline_d = max_d_number(d.text for d in docs if d.kind == "baseline" and isinstance(d, Document))
    given = next((d for d in docs if d.path == axis.living_doc and isinstance(d, Document)), None)
    living_doc = living_doc or given or (living() if axis == INFERENCE else None)
    rules = rules or BriefingRules()
    increments = rules.increments.model_copy(
        update={"min_count": increment_range[0], "max_count": increment_range[1]}
    )
    return assemble_briefing(
        BriefingRequest(
            axis=axis,
            axes=AXES,
            trigger=trigger,
            window=window_bounds(end, timedelta(hours=24)),
            generated_at=end,
            zone=SH,
            documents=docs,
            living=living_doc,
            history=history or BriefingHistory(frozenset(earlier), baseline_d if last_d is None else last_d),
            lang=lang,
            rules=rules.model_copy(update={"increments": increments}),
            superseded=superseded,
            load=load,
            between_reads=between_reads,
            rejected=rejected,
        )
    )


def example_documents(axis: AxisSpec = INFERENCE) -> list[Document]:
    """The example root's files that the pipeline routes to `axis`, parsed."""
    docs = []
    for p in sorted(EXAMPLE_ROOT.rglob("*.md")):
        data = p.read_bytes()
        rel = p.relative_to(EXAMPLE_ROOT).as_posix()
        raw = RawFile(
            path=rel, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest()
        )
        doc = parse_document(raw, zone=SH)
        if axis.name in assign_axes(doc, AXES):
            docs.append(doc)
    return docs


def hostile_id_note() -> str:
    """A worst-case note for D-items (issue 15): 50 000 ids, thousands of titles that conflict, versions."""

    def ident(n: int, yymm: str = "2609") -> str:
        return f"{yymm}.{10000 + n:05d}"

    lines = ["# vLLM 推理 KV cache 论文表", "", "## 同名论文", "| arXiv | Title |", "|---|---|"]
    lines += [f"| {ident(n)} | Fluid-Guided Online Scheduling for LLM Inference |" for n in range(500)]
    lines += ["", "## 一号多名", "| arXiv | Title |", "|---|---|"]
    lines += [f"| 2609.00001 | Kernel{n} Fusion{n} for Decoding{n} Serving{n} |" for n in range(2000)]
    lines += [f"- [Cache{n} Eviction{n} Policy{n}](https://arxiv.org/abs/{ident(n)})" for n in range(2000)]
    lines += ["", "## 未来", " ".join(f"arXiv:{ident(n % 89999, '2612')}" for n in range(50_000))]
    lines += ["", "## 版本", *(f"- vLLM 0.{n}.3 推理吞吐 {n}% ⚠ 待核实" for n in range(2000))]
    return "\n".join(lines) + "\n"
