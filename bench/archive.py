"""A synthetic notes root with a fixed seed: five writers, zh and en, paper cards, exact and near duplicates.

Note i depends only on (seed, i) and the notes just before it, so a root of N notes is the first N notes of
a larger one. Text comes from real records: arXiv titles and abstracts (tests/corpus/arxiv_metadata) and the
Chinese abstracts of real newsletters (tests/corpus/daily_digests).

    python -m bench.archive --n 1000 --out /tmp/root
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo

PROJECT = Path(__file__).resolve().parents[1]
ARXIV_JSONL = PROJECT / "tests/corpus/arxiv_metadata/zl-asica_llm_inference_subset.jsonl"
ZH_DIGESTS = PROJECT / "tests/corpus/daily_digests/zh_hf_2404589803/final"

SEED = 20260927
SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)  # every note is stamped inside the 24 h window ending here
WRITERS = ("jay", "tom", "spark", "flyp", "stephen")
AXES = ("inference", "llm-infra", "risk", "llm-application")
MIN_BYTES, MAX_BYTES = 5 * 1024, 20 * 1024
EXACT_SHARE, NEAR_SHARE, CARD_SHARE = 0.10, 0.10, 0.10
# Duplicates copy one of the last RECENT notes, as a repost does; it also bounds the generator's memory.
RECENT = 500

_ZH_POINTS = (
    "在 {gpu} 上实测 TTFT 降低 {p}%，吞吐提升 {x}×。",
    "KV cache 占用从 {a} GB 降至 {b} GB，精度损失低于 {q}%。",
    "与 vLLM v0.{v}.0 对比，P99 延迟下降 {p}%（batch={bs}）。",
    "作者称 speculative decoding 接受率达到 {p}%，待核实。",
    "在 {gpu} 集群上训练成本降低 {p}%，推理侧收益约 {x}×。",
)
_EN_POINTS = (
    "On {gpu}, TTFT drops by {p}% and throughput rises {x}x.",
    "KV cache memory falls from {a} GB to {b} GB with under {q}% accuracy loss.",
    "Against vLLM v0.{v}.0 the P99 latency is {p}% lower at batch size {bs}.",
    "The authors report a {p}% acceptance rate for speculative decoding.",
    "Serving cost on a {gpu} cluster falls by {p}%, about {x}x per token.",
)
_GPUS = ("H100", "H200", "B200", "A100", "MI300X", "L40S")
_EXTRA_AXIS = {"llm-infra": "GPU cluster", "risk": "security attack", "llm-application": "agent RAG"}


@dataclass(frozen=True)
class Paper:
    """One real arXiv record: the pool that notes cite, so ids recur across notes."""

    id: str
    title: str
    abstract: str


@lru_cache(maxsize=1)
def papers() -> tuple[Paper, ...]:
    out = []
    for line in ARXIV_JSONL.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if re.fullmatch(r"\d{4}\.\d{5}", rec["id"]):  # paper-card names need the 5-digit form
            out.append(Paper(rec["id"], " ".join(rec["title"].split()), " ".join(rec["summary"].split())))
    return tuple(out)


@lru_cache(maxsize=1)
def zh_abstracts() -> tuple[str, ...]:
    found: list[str] = []
    for path in sorted(ZH_DIGESTS.glob("*.md")):
        for m in re.finditer(r"\*\*摘要：\*\*\s*\n(.+)", path.read_text(encoding="utf-8")):
            text = m.group(1).strip()
            if len(text) > 80:
                found.append(text)
    return tuple(found)


def _point(rng: random.Random, zh: bool) -> str:
    template = rng.choice(_ZH_POINTS if zh else _EN_POINTS)
    return template.format(
        gpu=rng.choice(_GPUS),
        p=f"{rng.uniform(1, 95):.1f}",
        x=f"{rng.uniform(1.1, 9.9):.1f}",
        a=rng.randint(20, 160),
        b=rng.randint(2, 19),
        q=f"{rng.uniform(0.1, 2):.1f}",
        v=rng.randint(20, 31),
        bs=rng.choice((1, 8, 32, 64, 256)),
    )


def _section(rng: random.Random, zh: bool) -> str:
    paper = rng.choice(papers())
    abstract = rng.choice(zh_abstracts()) if zh else paper.abstract
    ref = rng.choice(
        (f"arXiv:{paper.id}", f"https://arxiv.org/abs/{paper.id}v1", f"arXiv {paper.id}v2", f"| {paper.id} |")
    )
    points = "\n".join(f"- {_point(rng, zh)}" for _ in range(rng.randint(2, 5)))
    lead = "来源" if zh else "Source"
    return f"## {paper.title}\n\n{abstract}\n\n{points}\n\n{lead}：{ref}\n"


def _stamp(rng: random.Random) -> datetime:
    return END - timedelta(seconds=rng.randint(120, 24 * 3600 - 120))


def _fresh(i: int, rng: random.Random) -> tuple[str, str]:
    """(relative path, content) of an original note or paper card."""
    zh = rng.random() < 0.5
    when = _stamp(rng)
    target = rng.randint(MIN_BYTES, MAX_BYTES)
    axes = ["inference"] + ([rng.choice(AXES[1:])] if rng.random() < 0.3 else [])
    card = rng.random() < CARD_SHARE
    body: list[str] = []
    if card:
        paper = rng.choice(papers())
        yymm, nnnnn = paper.id.split(".")
        rel = f"paper_cards/{i}-{yymm}-{nnnnn}.md"
        title = paper.title
        head = (
            f'---\ncard: {i}\narxiv: "{paper.id}"\ntitle: {json.dumps(title, ensure_ascii=False)}\n'
            f'primary: inference\nanchors: {{inference: "§{rng.randint(1, 5)}.{rng.randint(1, 6)}"}}\n'
            f"date: {when.isoformat()}\n---\n"
        )
        body.append(f"# {title}\n\n{paper.abstract}\n")
    else:
        writer = rng.choice(WRITERS)
        title = rng.choice(papers()).title
        slug = "-".join(re.findall(r"[a-z0-9]+", title.lower())[:5]) or "note"
        rel = f"inbox/{writer}/{when:%Y-%m-%d-%H%M}-{slug}-{i}.md"
        extra = " ".join(_EXTRA_AXIS[a] for a in axes[1:])
        head = (
            f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\nwriter: {writer}\n"
            f"date: {when.isoformat()}\naxes: [{', '.join(axes)}]\ntags: [inference{', ' + extra if extra else ''}]\n---\n"
        )
        body.append(f"# {'笔记' if zh else 'Notes'}：{title}\n")
    size = len(head.encode()) + sum(len(b.encode()) for b in body)
    while size < target:
        part = _section(rng, zh)
        grown = size + len(part.encode())
        if grown > MAX_BYTES - 256 and size >= MIN_BYTES:  # room left for a repost's added line
            break
        body.append(part)
        size = grown
    return rel, head + "\n".join(body)


def _near(content: str, rng: random.Random) -> str:
    """A repost: a few figures changed and a line added, so the shingle Jaccard stays well above 0.8."""
    lines = content.split("\n")
    points = [k for k, line in enumerate(lines) if line.startswith("- ")]
    for k in rng.sample(points, min(len(points), 3)):
        lines[k] = re.sub(r"\d+\.\d", lambda _m: f"{rng.uniform(1, 95):.1f}", lines[k])
    lines.append(f"\n转载自 {rng.choice(WRITERS)} 的笔记，略有修改（{rng.randint(1, 999)}）。")
    return "\n".join(lines)


def _copy_path(i: int, rng: random.Random) -> str:
    writer = rng.choice(WRITERS)
    return f"inbox/{writer}/{_stamp(rng):%Y-%m-%d-%H%M}-repost-{i}.md"


class Generator:
    """Notes 0, 1, 2 … in order; each is (relative path, content, kind ∈ fresh|exact|near)."""

    def __init__(self, seed: int = SEED) -> None:
        self.seed = seed
        self._recent: OrderedDict[int, str] = OrderedDict()

    def note(self, i: int) -> tuple[str, str, str]:
        rng = random.Random(f"{self.seed}:{i}")
        roll = rng.random()
        kind = "fresh"
        if i >= 10 and roll < EXACT_SHARE + NEAR_SHARE:
            j = rng.randrange(max(0, i - RECENT), i)
            base = self._recent.get(j)
            if base is not None:
                kind = "exact" if roll < EXACT_SHARE else "near"
                content = base if kind == "exact" else _near(base, rng)
                rel = _copy_path(i, rng)
        if kind == "fresh":
            rel, content = _fresh(i, rng)
        self._recent[i] = content
        if len(self._recent) > RECENT:
            self._recent.popitem(last=False)
        return rel, content, kind


def living_documents() -> dict[str, str]:
    """One living document per axis, citing ids of the pool so that some ids are continued."""
    rng = random.Random(f"{SEED}:living")
    docs = {}
    for axis in AXES:
        parts = [f"# {axis}.md v3.44\n\n{axis} 主轴的活文档。\n"]
        for s in range(1, 6):
            parts.append(f"## §{s} {rng.choice(papers()).title}\n")
            for sub in range(1, 5):
                paper = rng.choice(papers())
                parts.append(f"### §{s}.{sub} {paper.title}\n{paper.abstract[:400]}（arXiv:{paper.id}）\n")
        docs[f"living/{axis}.md"] = "\n".join(parts)
    return docs


def work_queue() -> tuple[str, str]:
    rng = random.Random(f"{SEED}:queue")
    items = "\n".join(
        f"{k}. [{rng.choice(AXES)}] {p.title} (arXiv:{p.id})"
        for k, p in enumerate(rng.sample(papers(), 10), 1)
    )
    return f"work-queue/{END:%Y-%m-%d-%H%M}.md", f"# Work queue\n\n{items}\n"


def _write(root: Path, rel: str, content: str) -> int:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode()
    path.write_bytes(data)
    return len(data)


@dataclass
class ArchiveStats:
    """What a generated root holds."""

    notes: int = 0
    files: int = 0
    bytes: int = 0
    exact: int = 0
    near: int = 0
    cards: int = 0
    zh_share: float = 0.0
    paths: list[str] = field(default_factory=list, repr=False)  # every file written, notes first


def generate(root: Path, n: int, seed: int = SEED) -> ArchiveStats:
    """Write n notes plus the living documents and a work queue under root; returns what was written."""
    stats = ArchiveStats()
    gen = Generator(seed)
    zh = 0
    for i in range(n):
        rel, content, kind = gen.note(i)
        stats.paths.append(rel)
        stats.bytes += _write(root, rel, content)
        stats.exact += kind == "exact"
        stats.near += kind == "near"
        stats.cards += rel.startswith("paper_cards/")
        zh += "来源" in content
    for rel, content in [*living_documents().items(), work_queue()]:
        stats.bytes += _write(root, rel, content)
        stats.paths.append(rel)
        stats.files += 1
    stats.notes = n
    stats.files += n
    stats.zh_share = zh / n if n else 0.0
    return stats


def link_prefix(src: Path, stats: ArchiveStats, dst: Path, n: int) -> None:
    """A root of the first n notes of a larger generated root (hard links), with its living documents."""
    for rel in stats.paths[:n] + stats.paths[stats.notes :]:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(src / rel, target)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args()
    print(generate(args.out, args.n, args.seed))


if __name__ == "__main__":
    main()
