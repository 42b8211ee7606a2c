"""The `predigest` command's entry point; `streams.command_line` parses its arguments and runs the command."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run `predigest` with these arguments (default: the command line's); the exit status."""
    # Imported here, not at the top: the parse processes (multiprocessing's spawn) import the worker's main
    # module, this one, before their own; the command's imports cost each of them ~0.35 s of CPU and ~16 MB.
    from streams.command_line import main as run

    return run(argv)


# `python -m streams.cli` (as `predigest run` starts its worker) under `predigest`'s guard of its start's signals.
if __name__ == "__main__":
    from streams.launch import main as launched

    sys.exit(launched())
