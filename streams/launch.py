"""The `predigest` executable (and `python -m streams.cli`, as `predigest run` starts its worker): a SIGTERM or
Ctrl-C while the command's modules are still imported (0.5-2 s) ends it with one line and 143 or 130 once they
are, as later on, where SIGTERM ended it silently and Ctrl-C with a traceback (or a Rust panic's lines, when it
landed in a compiled extension's import). A SIGINT the process started with ignored stays ignored."""

from __future__ import annotations

import signal
from types import FrameType

_CAUGHT: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    # Nothing raised into the import: a compiled extension being imported turns an exception into a panic.
    _CAUGHT.append(signum)


def main() -> int:
    """`streams.command_line.main`, told of a signal that came while its modules were imported (until its own
    handlers replace this one, inside its `try`): then one line, 128 + the signal."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # ignored (`cmd &` in a script): it stays so
        signal.signal(signal.SIGINT, _remember)
    signal.signal(signal.SIGTERM, _remember)
    from streams import command_line

    return command_line.main(caught=_CAUGHT)
