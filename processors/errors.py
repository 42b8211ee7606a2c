"""Root exception of predigest and the processors family."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from processors.reasons import RejectionCode

T = TypeVar("T")
V = TypeVar("V")

# The process stopping, never an input's fault. Any other BaseException met while reading an input is the input's:
# a Rust panic from the native extension (PyO3's `PanicException`) derives from BaseException, not Exception.
PROCESS_EXITS: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemExit, GeneratorExit)


class PredigestError(Exception):
    """Root of every error predigest raises on purpose."""


class ProcessorError(PredigestError):
    """A processor could not turn its input into output."""


class ParseError(ProcessorError):
    """A file could not be parsed into a document; the file is routed to `rejected` with `code`."""

    def __init__(self, message: str, code: RejectionCode = "parse") -> None:
        super().__init__(message)
        self.code: RejectionCode = code


class BuildCancelledError(ProcessorError):
    """A briefing's build ended between two of its steps (its request's `stop`, a read of the state, a piece of its
    packing) in the thread running it: the briefing was cancelled."""


class MissingRowError(ProcessorError, ValueError):
    """A stored version lacks one of the state's rows of it (`contents` or `source_rows`): not damaged, and
    restored by a rebuild while the documents topic holds its record."""


def unpanicked(read: Callable[[V], T], value: V) -> T:
    """`read(value)`, with a Rust panic on a hostile input raised as ValueError: the input's fault, not a crash."""
    try:
        return read(value)
    except Exception:
        raise
    except BaseException as exc:
        if isinstance(exc, PROCESS_EXITS):
            raise
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
