"""The pages cite tests by `file::name` as the proof of a guarantee: each cited test exists, so a reader who runs
it runs what the page claims (a rename left guarantees.md naming a test that was gone)."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
# performance.md's sections are dated records: a test they name is the one of that day.
PAGES = ["README.md", *(p.name for p in (PROJECT / "docs").glob("*.md") if p.name != "performance.md")]
_CITED = re.compile(r"([\w/]*test_\w+\.py)::(\w+)")


def _pages() -> dict[str, str]:
    return {
        name: (PROJECT / name if name == "README.md" else PROJECT / "docs" / name).read_text()
        for name in PAGES
    }


def _defined(file: str, name: str) -> bool:
    tail = file.removeprefix("tests/")
    found = [p for p in (PROJECT / "tests").rglob(Path(file).name) if p.as_posix().endswith(tail)]
    pattern = re.compile(rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b", re.M)
    return any(pattern.search(p.read_text()) for p in found)


def test_every_test_a_page_cites_exists() -> None:
    cited = {(page, m[1], m[2]) for page, text in _pages().items() for m in _CITED.finditer(text)}
    missing = sorted(f"{page}: {file}::{name}" for page, file, name in cited if not _defined(file, name))
    assert cited and not missing, "\n".join(missing)
