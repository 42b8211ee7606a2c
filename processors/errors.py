"""Root exception of predigest and the processors family."""


class PredigestError(Exception):
    """Root of every error predigest raises on purpose."""


class ProcessorError(PredigestError):
    """A processor could not turn its input into output."""


class ParseError(ProcessorError):
    """A file could not be parsed into a document; the file is routed to `rejected`."""
