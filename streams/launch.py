"""The `predigest` executable: a SIGTERM or Ctrl-C while the command's modules are still imported (0.5-2 s) ends
it with one line and 143 or 130 once they are, as later on, where SIGTERM ended it silently and Ctrl-C with a
traceback (or a Rust panic's lines, when it landed in a compiled extension's import)."""

from __future__ import annotations

import signal
from types import FrameType

_CAUGHT: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    # Nothing raised into the import: a compiled extension being imported turns an exception into a panic.
    _CAUGHT.append(signum)


def main() -> int:
    """`streams.command_line.main`, unless a signal came while its modules were imported: then one line, 128 + the signal."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _remember)
    from streams import command_line, logs, stopping
    from streams.errors import StoppedBySignalError

    # Python's own SIGINT handler, over which asyncio.run sets its own; command_line.main's SIGTERM handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stopping.raise_on_sigterm()
    if _CAUGHT:
        logs.configure(log_json=False, level="INFO")  # the settings, which may ask for JSON, are not read
        command_line.log.error("%s", StoppedBySignalError(_CAUGHT[0], " while starting; nothing was started"))
        return 128 + _CAUGHT[0]
    return command_line.main()
