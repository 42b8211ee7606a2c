"""`python -m bench.quality` (`make quality`): build the roots, brief them in process, print the figures.

Prints one line per figure (`name value target verdict`), writes bench/quality.json, and leaves every
briefing (JSON + Markdown), the truth and the final root under .cache/quality/<root>/ for a human to read.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

from bench.quality import builder, runner
from bench.quality.report import all_figures, print_report, report, write_outputs

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    parser.add_argument(
        "--root", action="append", choices=builder.ROOT_NAMES, help="only these roots (repeatable)"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / ".cache" / "quality", help="where the briefings go"
    )
    parser.add_argument(
        "--json", type=Path, default=REPO / "bench" / "quality.json", help="the figures as JSON"
    )
    parser.add_argument("--verbose", action="store_true", help="show the product's own log lines")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s %(name)s %(message)s"
    )
    started = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        for name in args.root or builder.ROOT_NAMES:
            print(f"building and briefing {name} …", file=sys.stderr)
            built = builder.build(name)
            folder = Path(tmp) / name
            result = runner.run(built, folder)
            runs.append(result)
            write_outputs(result, args.out, folder / "root")
    seconds = time.perf_counter() - started
    figures = all_figures(runs)
    print_report(figures, runs, seconds)
    data = report(figures, runs, seconds, REPO)
    args.json.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"\nbriefings, truth and roots: {args.out}/<root>/   figures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
