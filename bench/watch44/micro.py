"""µs a path of the watcher's stats over a built root, in process: `root_files.lstat` one path at a time (of the
tree on PYTHONPATH), and `root_stats.stat_many` of them all (watch44's, found through the venv's editable install
when the tree has none: `streams` is a namespace package).

    PYTHONPATH=TREE python bench/watch44/micro.py ROOT [--paths 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path

from streams import root_files, root_stats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument("--paths", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    root = a.root.resolve()
    rels = sorted(
        f"inbox/{w}/{name}" for w in os.listdir(root / "inbox") for name in os.listdir(root / "inbox" / w)
    )[: a.paths]
    for r in range(a.rounds):
        began = time.process_time()
        one = [root_files.lstat(root, rel) for rel in rels]
        each = (time.process_time() - began) / len(rels) * 1e6
        began = time.process_time()
        many = root_stats.stat_many(root, rels)
        at_once = (time.process_time() - began) / len(rels) * 1e6
        assert [(s.st_size, s.st_mtime) if s else None for s in many] == one
        digest = hashlib.sha256(repr(one).encode()).hexdigest()[:12]
        print(
            f"round {r + 1}: lstat one at a time {each:.2f} µs, stat_many {at_once:.2f} µs, {digest}",
            flush=True,
        )


if __name__ == "__main__":
    main()
