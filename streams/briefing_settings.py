"""The briefing side of the settings: the axes a worker briefs by default."""

from __future__ import annotations

from processors.models import AxisSpec

DEFAULT_AXES = (
    AxisSpec(
        name="inference",
        keywords=("inference", "推理", "vLLM", "SGLang", "KV cache", "TTFT", "serving", "speculative"),
        living_doc="living/inference.md",
    ),
    AxisSpec(
        name="llm-infra",
        keywords=("GPU", "cluster", "training", "Kubernetes", "K8s", "llm-d", "基础设施"),
        living_doc="living/llm-infra.md",
    ),
    AxisSpec(
        name="risk", keywords=("security", "attack", "安全", "攻击", "风险"), living_doc="living/risk.md"
    ),
    AxisSpec(
        name="llm-application",
        keywords=("agent", "RAG", "LangGraph", "应用"),
        living_doc="living/llm-application.md",
    ),
)
