"""rescan45's table: `bench.watch44.first_start`'s runs with what each run's rescans re-reported (issue 14).

    python -m bench.watch44.first_start --n 100000 --pairs 4 --a MAIN --b . --work W > W/pairs.jsonl
    python -m bench.rescan45.summary W/pairs.jsonl W

A rescan logs "rescan: N new or changed file(s)" for what it marked that no event reported: on main, during a
first start, every note not yet acknowledged, each one re-stat'ed by that rescan.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_RESCAN = re.compile(r"rescan: (\d+) new or changed")


def rescans(log: Path) -> tuple[int, int]:
    """(how many rescans reported paths, how many paths they reported in all)."""
    found = [int(n) for n in _RESCAN.findall(log.read_text(errors="replace"))]
    return len(found), sum(found)


def main() -> None:
    runs, work = Path(sys.argv[1]), Path(sys.argv[2])
    print(
        "| pair | load | watcher CPU s A / B | + broker A / B | wall s A / B | rescans reporting, paths A / B |"
    )
    print("|---|---|---|---|---|---|")
    rows = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()]
    for pair in sorted({r["pair"] for r in rows}):
        a, b = (next(r for r in rows if r["pair"] == pair and r["variant"] == v) for v in "AB")
        logs = {v: next(work.glob(f"p{pair}-{v}-*/watch.log")) for v in "AB"}
        (na, pa), (nb, pb) = rescans(logs["A"]), rescans(logs["B"])
        first, last = (a, b) if pair % 2 else (b, a)
        load = f"{first['load'][0]:.1f}-{last['load'][1]:.1f}"
        both = [x["watcher_cpu_s"] + x["broker_cpu_s"] for x in (a, b)]
        print(
            f"| {pair} | {load} | {a['watcher_cpu_s']:.2f} / {b['watcher_cpu_s']:.2f} | {both[0]:.1f} / {both[1]:.1f}"
            f" | {a['wall_s']:.1f} / {b['wall_s']:.1f} | {na}, {pa} / {nb}, {pb} |"
        )


if __name__ == "__main__":
    main()
