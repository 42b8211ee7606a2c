"""How `processors/placement.py`'s threshold was chosen: placement on the real October2001 KV-cache list.

    .venv/bin/python -m bench.placement_calibration

Three sets, each scored at several thresholds with the product's own `SectionIndex`:
- `list`: every paper of the list, taken out of it (leave-one-out), placed by its title: its section is the truth;
- `fits`: the new papers whose sections the quality benchmark labels by hand (r1, r3), by title and the
  abstract's sentences with figures (what a writer's key points carry); `[]` means no section fits;
- `negatives`: the corpus's speculative-decoding papers, which belong nowhere in a KV-cache compression list.
A suggestion is right when its section is the truth; precision is over suggestions made, coverage over papers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from processors import placement
from processors.living_doc import LivingDoc, parse_living_doc
from processors.placement import section_index
from tests.processors.notes import note

ROOT = Path(__file__).resolve().parents[1]
KV_LIST = ROOT / "tests/corpus/living_docs/October2001_Awesome-KV-Cache-Compression_README.md"
RECORDS = ROOT / "tests/corpus/arxiv_metadata/zl-asica_llm_inference_subset.jsonl"
LABELS = [ROOT / f"bench/quality/roots/{r}_labels.json" for r in ("r1", "r3")]
THRESHOLDS = (0.14, 0.16, 0.18, 0.20, 0.22, 0.25, 0.30)


def _living(text: str) -> LivingDoc:
    return parse_living_doc(note("living/inference.md", text))


def _points(summary: str) -> tuple[str, ...]:
    sentences = re.split(r"(?<=\.)\s+", " ".join(summary.split()))
    return tuple(s for s in sentences if re.search(r"\d", s))[:3]


def _cases() -> dict[str, list[tuple[str, tuple[str, ...], set[str], LivingDoc]]]:
    text = KV_LIST.read_text(encoding="utf-8")
    whole = _living(text)
    records = {r["id"]: r for r in map(json.loads, RECORDS.read_text(encoding="utf-8").splitlines())}
    cases: dict[str, list[tuple[str, tuple[str, ...], set[str], LivingDoc]]] = {
        "list": [],
        "fits": [],
        "negatives": [],
    }
    for s in whole.sections:
        for item in s.items if s.placeable else ():
            if not item.ids:
                continue
            without = "\n".join(line for line in text.splitlines() if item.ids[0] not in line)
            cases["list"].append((item.title, (), {s.label}, _living(without)))
    for path in LABELS:
        fits = json.loads(path.read_text(encoding="utf-8"))["living"]["inference"]["fits"]
        for pid, wanted in fits.items():
            if pid in records and pid not in whole.cited_ids:
                r = records[pid]
                cases["fits"].append((r["title"], _points(r["summary"]), set(wanted), whole))
    for r in records.values():
        if "speculative" in r["title"].lower() and r["id"] not in whole.cited_ids:
            cases["negatives"].append((r["title"], _points(r["summary"]), set(), whole))
    return cases


def main() -> None:
    cases = _cases()
    print(f"cases: {', '.join(f'{k} {len(v)}' for k, v in cases.items())}")
    for threshold in THRESHOLDS:
        placement.FIT = threshold
        line = [f"FIT {threshold:.2f}"]
        for name, rows in cases.items():
            placed = [(section_index(living).fitting(t, points), truth) for t, points, truth, living in rows]
            made = [(s.label in truth) for s, truth in placed if s is not None]
            line.append(
                f"{name}: precision {sum(made) / max(1, len(made)):.2f} coverage {len(made) / len(rows):.2f}"
            )
        print(" | ".join(line))


if __name__ == "__main__":
    main()
