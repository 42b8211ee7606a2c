"""The ingests' lines (bench/zstd45/ingest.py) as performance.md's rows: `python -m bench.zstd45.table FILE...`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

PARTS = ("worker", "parse", "broker", "backfill", "all")


def _cell(run: dict[str, object]) -> str:
    parts = [f"{run[p]:,}".replace(",", " ") for p in PARTS]
    return ", ".join(parts[:-1]) + f", **{parts[-1]}** ({run['rate']}/s, {run['documents_kb']} KB)"


def main(files: list[Path]) -> None:
    for path in files:
        runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        pairs: dict[int, dict[str, dict[str, object]]] = {}
        for run in runs:
            pairs.setdefault(int(run["pair"]), {})[str(run["variant"])] = run
        change = {p: 0.0 for p in PARTS}
        sums = {"main": 0, "variant": 0}
        done = [pair for pair in pairs.values() if len(pair) == 2]
        for n, pair in sorted(pairs.items()):
            if len(pair) < 2:
                continue
            m, v = pair["main"], pair["variant"]
            print(f"| {path.stem} {n} | {m['load']} / {v['load']} | {_cell(m)} | {_cell(v)} |")
            for p in PARTS:
                change[p] += (int(v[p]) - int(m[p])) / len(done)  # type: ignore[call-overload]
            sums["main"] += int(m["all"])  # type: ignore[call-overload]
            sums["variant"] += int(v["all"])  # type: ignore[call-overload]
        each = ", ".join(f"{p} {change[p]:+.0f}" for p in PARTS)
        by_pair = " / ".join(
            f"{int(pair['variant']['all']) - int(pair['main']['all']):+d}"  # type: ignore[call-overload]
            for pair in done
        )
        ratio = sums["variant"] / max(sums["main"], 1)
        print(f"{path.stem}: mean change {each} (all by pair {by_pair}); ratio of the sums {ratio:.3f}")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]])
