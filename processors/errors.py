"""Root exception of predigest and the processors family."""

from __future__ import annotations

from processors.reasons import RejectionCode


class PredigestError(Exception):
    """Root of every error predigest raises on purpose."""


class ProcessorError(PredigestError):
    """A processor could not turn its input into output."""


class ParseError(ProcessorError):
    """A file could not be parsed into a document; the file is routed to `rejected` with `code`."""

    def __init__(self, message: str, code: RejectionCode = "parse") -> None:
        super().__init__(message)
        self.code: RejectionCode = code
