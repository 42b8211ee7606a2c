"""Reading the configuration's TOML file and its PREDIGEST_* variables, and saying in one line what is wrong.

Generic over the settings model: `streams.settings` hands in the model class and the environment, so this module
reads no environment of its own. Every message names the file and line, or the variable, and what to change.
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from streams.errors import ConfigError

ENV_PREFIX = "PREDIGEST_"
ENV_NESTED = "__"
# Variables of the compose file (`.env.example`) that fill in docker-compose.yml: not settings, never refused.
COMPOSE_VARIABLES = frozenset({"PREDIGEST_NOTES", "PREDIGEST_BRIEFINGS", "PREDIGEST_WORKER_MEMORY"})
_TOML_WHERE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")
EXAMPLE = "examples/predigest.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """The file's table, or ConfigError naming the file (and the line) and what to do."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"config file {path} does not exist: check --config ({EXAMPLE} is a commented example)"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory: give --config a TOML file") from None
    except OSError as exc:
        raise ConfigError(
            f"config file {path} cannot be read ({exc.strerror}): check its permissions"
        ) from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text: save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        text = str(exc)
        match = _TOML_WHERE.search(text)
        reason = text[: match.start()] if match else text
        if match and match.group(1):
            where = f"{path} line {match.group(1)}, column {match.group(2)}"
        else:
            where = f"{path} (at its end)"
        raise ConfigError(f"{where}: {reason} (not valid TOML): fix the syntax there") from None


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds: itself, the item of a tuple or list of them, or the X of `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (tuple, list, Union, types.UnionType):
        for arg in get_args(annotation):
            found = model_of(arg)
            if found is not None:
                return found
    return None


def _closest(name: str, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def unknown_keys(
    model: type[BaseModel], data: Mapping[str, Any], where: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(where, the closest setting) for every key of a TOML table that is no setting."""
    fields = model.model_fields
    for key, value in data.items():
        here = (*where, key)
        if key not in fields:
            yield here, _closest(key, list(fields))
            continue
        sub = model_of(fields[key].annotation)
        if sub is None:
            continue
        if isinstance(value, Mapping):
            yield from unknown_keys(sub, value, here)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from unknown_keys(sub, item, (*here, i))


def unknown_variables(model: type[BaseModel], environ: Mapping[str, str]) -> Iterator[str]:
    """What is wrong with every PREDIGEST_* variable that names no setting (pydantic-settings ignores them)."""
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX) or name.upper() in COMPOSE_VARIABLES:
            continue
        current: type[BaseModel] | None = model
        prefix = ENV_PREFIX
        for part in name[len(ENV_PREFIX) :].lower().split(ENV_NESTED):
            if current is None or part not in current.model_fields:
                choices = [prefix + f.upper() for f in current.model_fields] if current else []
                yield f"unknown variable {name}{_closest(name.upper(), choices)}"
                break
            prefix += part.upper() + ENV_NESTED
            current = model_of(current.model_fields[part].annotation)


def dotted(loc: Sequence[str | int]) -> str:
    """`kafka.bootstrap`, `axes[1].name`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def variable(loc: Sequence[str | int]) -> str | None:
    """The PREDIGEST_* variable that sets the key at `loc`, if a variable can (not inside a list)."""
    if any(isinstance(p, int) for p in loc) or not loc:
        return None
    return ENV_PREFIX + ENV_NESTED.join(str(p).upper() for p in loc)


def _key_line(path: Path, loc: Sequence[str | int]) -> int | None:
    """The line of the file that sets the last key of `loc`: the first such line after its table's header."""
    keys = [p for p in loc if isinstance(p, str)]
    if not keys:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    start = 0
    if len(keys) > 1:
        table = r"\s*\.\s*".join(map(re.escape, keys[:-1]))
        header = re.compile(r"^\s*\[\[?\s*" + table + r"\s*\]\]?")
        start = next((i for i, line in enumerate(lines) if header.match(line)), 0)
    key = re.compile(r"""^\s*["']?""" + re.escape(keys[-1]) + r"""["']?\s*=""")
    return next((i + 1 for i in range(start, len(lines)) if key.match(lines[i])), None)


def in_file(data: Mapping[str, Any], loc: Sequence[str | int]) -> bool:
    node: Any = data
    for part in loc:
        listed = isinstance(part, int) and isinstance(node, list) and part < len(node)
        if not (listed or (isinstance(node, Mapping) and part in node)):
            return False
        node = node[part]
    return True


def source_of(
    loc: Sequence[str | int], environ: Mapping[str, str], file: Path | None, data: Mapping[str, Any]
) -> str | None:
    """Where the value at `loc` came from: its variable, or the file and line; None for a default or --option."""
    for depth in range(len(loc), 0, -1):  # a variable may set the whole table (PREDIGEST_KAFKA='{…}')
        name = variable(loc[:depth])
        if name is not None and name in environ:
            return name
    if file is not None and in_file(data, loc):
        line = _key_line(file, loc)
        return f"{file} line {line}" if line else str(file)
    return None


def describe(
    exc: ValidationError, environ: Mapping[str, str], file: Path | None, data: Mapping[str, Any]
) -> str:
    """One line for everything pydantic refused (it never echoes the input: hide_input_in_errors)."""
    parts = []
    for e in exc.errors():
        loc = tuple(e["loc"])
        what = e["msg"].removeprefix("Value error, ")  # a validator's own message says what to do
        if not loc:
            parts.append(what)
            continue
        source = source_of(loc, environ, file, data)
        key = dotted(loc)
        fix = f"; fix it in {source}" if source else ""
        parts.append(f"{key}: {what}{fix}")
    return "configuration error: " + "; ".join(parts)


def refuse_unknown(
    model: type[BaseModel], environ: Mapping[str, str], file: Path | None, data: Mapping[str, Any]
) -> None:
    """ConfigError for keys of the file and PREDIGEST_* variables that are no setting (a typo would go unseen)."""
    problems = []
    if file is not None:
        for loc, hint in unknown_keys(model, data):
            line = _key_line(file, loc)
            where = f"{file} line {line}" if line else str(file)
            problems.append(f"unknown key {dotted(loc)!r} in {where}{hint}")
    problems += list(unknown_variables(model, environ))
    if problems:
        raise ConfigError(
            "configuration error: " + "; ".join(problems) + " (every setting: docs/configuration.md)"
        )
