"""Briefing files, written atomically (temp file + rename) so a reader never sees half a briefing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from processors.models import Briefing


def _atomic_write(target: Path, data: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class BriefingFiles:
    """Writes `<out>/<axis>/<basename>.md` and `.json`."""

    def __init__(self, out_dir: Path) -> None:
        self._out = out_dir

    def write(self, briefing: Briefing, basename: str, markdown: str) -> tuple[Path, Path]:
        folder = self._out / briefing.axis
        md, js = folder / f"{basename}.md", folder / f"{basename}.json"
        _atomic_write(js, briefing.model_dump_json(by_alias=True, indent=2))
        _atomic_write(md, markdown)
        return md, js
