"""examples/predigest.toml is the configuration a user finds: it must name every setting, with its default."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from streams.config_load import model_of
from streams.settings import Settings, load_settings

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "examples" / "predigest.toml"
# `# key = value`: a setting shown but left unset (a secret, a path that exists only in production).
_COMMENTED = re.compile(r"^#\s?([A-Za-z_]+\s*=.*)$")


def _fields(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every setting's dotted key, into nested tables and the items of [[axes]]."""
    for name, field in model.model_fields.items():
        sub = model_of(field.annotation)
        if sub is None:
            yield prefix + name
        else:
            yield from _fields(sub, f"{prefix}{name}.")


def _keys(table: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from _keys(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for item in value:
                yield from _keys(item, f"{prefix}{key}.")
        else:
            yield prefix + key


def _with_commented_settings(text: str) -> str:
    return "\n".join(_COMMENTED.sub(r"\1", line) for line in text.splitlines())


def test_the_example_names_every_setting() -> None:
    """A setting added to streams/settings.py without a line in the example fails here."""
    text = EXAMPLE.read_text(encoding="utf-8")
    shown = set(_keys(tomllib.loads(_with_commented_settings(text))))
    missing = sorted(set(_fields(Settings)) - shown)
    assert not missing, f"examples/predigest.toml does not show {missing}"
    unknown = sorted(shown - set(_fields(Settings)))
    assert not unknown, f"examples/predigest.toml shows keys that are no setting: {unknown}"


def test_the_example_loads_and_holds_the_defaults() -> None:
    """What the file says is what a missing key means: its values are the model's defaults."""
    loaded = load_settings(EXAMPLE)
    assert loaded.model_dump() == Settings().model_dump()


def test_every_setting_of_the_example_has_a_comment_above_its_group() -> None:
    """No bare key: each run of key lines is introduced by a comment saying what it does."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    bare = []
    for i, line in enumerate(lines):
        if re.match(r"^[a-z_]+\s*=", line):
            j = i - 1
            while j >= 0 and re.match(r"^([a-z_]+\s*=|\s+\S|\])", lines[j]):
                j -= 1  # the group's other keys and the continuation lines of a multi-line array
            if j < 0 or not (lines[j].startswith("#") or lines[j].startswith("[")):
                bare.append(line)
    assert not bare, f"keys with no comment: {bare}"
