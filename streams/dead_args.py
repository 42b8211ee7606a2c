"""The `dead` command's arguments, apart from what it does (`streams.dead_admin`): every other command starts
without rich, the dead-letter modules and their metrics."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def add_parser(sub: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """The `dead` command and its three subcommands (each takes the `parents` options: --config, -v)."""
    d = sub.add_parser("dead", help="the dead-letter topic: list | replay | resume")
    actions = d.add_subparsers(dest="dead_action", required=True)
    ls = actions.add_parser(
        "list", parents=parents, help="the newest dead letters: origin, error, time, a preview"
    )
    ls.add_argument("--limit", type=int, default=50, help="how many, newest (default 50)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    rp = actions.add_parser(
        "replay", parents=parents, help="re-drive chosen dead letters onto their source topic after a fix"
    )
    rp.add_argument(
        "--ids", nargs="+", metavar="ID", help="dead letters by id (PARTITION:OFFSET, from `dead list`)"
    )
    rp.add_argument("--from-offset", type=int, metavar="N", help="every dead letter at offset N or later")
    rp.add_argument("--dry-run", action="store_true", help="say what would be replayed, send nothing")
    actions.add_parser(
        "resume", parents=parents, help="clear a worker's dead-letter stop (run where its state_dir is)"
    )
