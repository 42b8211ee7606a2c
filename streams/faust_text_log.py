"""The worker's text log lines, with Faust's tables: apart from `streams.logs` so that the other commands start
without Faust's `mode`."""

from __future__ import annotations

from mode.utils.logging import ExtensionFormatter

from streams.logs import OneRecordPerLine


class FaustTextFormatter(OneRecordPerLine, ExtensionFormatter):
    """The worker's text lines: `TEXT_FORMAT` with Faust's tables, one record per line."""
