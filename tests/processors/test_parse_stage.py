"""The parse stage's documents records as bytes: the same notes give the same records in every process."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import pytest

from bench.archive import Generator
from processors.models import RawFile
from processors.parse_stage import RouteParams, documents_records, route_file, route_value
from processors.raw_record import raw_record
from tests.processors.notes import AXES, EXAMPLE_ROOT, SH

PROJECT = Path(__file__).resolve().parents[2]

# Parses every note of the example root as a parse process does and prints a digest of each record.
_RECORDS = """
import hashlib
from datetime import UTC, datetime
from processors.models import RawFile
from processors.parse_stage import RouteParams, documents_records, route_file
from tests.processors.notes import AXES, EXAMPLE_ROOT, SH
params = RouteParams(axes=AXES, zone=SH, max_bytes=4 << 20, message_limit=8 << 20)
for path in sorted(EXAMPLE_ROOT.rglob("*.md")):
    data = path.read_bytes()
    rel = path.relative_to(EXAMPLE_ROOT).as_posix()
    raw = RawFile(path=rel, content=data, size=len(data), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
    for key, value in documents_records([route_file(raw, params, datetime(2026, 9, 27, tzinfo=UTC), 1)], params):
        print(rel, hashlib.sha256(key + value).hexdigest())
"""


def _records_in_a_process(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _RECORDS], cwd=PROJECT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def test_a_notes_record_has_the_same_bytes_whatever_the_hash_seed() -> None:
    # Parse processes and workers each have their own seed: a record re-parsed elsewhere (a replay of raw, a
    # second worker) is byte for byte the first, as is a note's `terms` (the living document keeps keyword terms
    # beyond its most frequent ones: they followed a set's order).
    first = _records_in_a_process("1")
    assert len(first) > 10
    assert _records_in_a_process("2") == first
    assert _records_in_a_process("3") == first


class PanicException(BaseException):
    """As PyO3 raises a Rust panic: not an Exception."""


def test_a_note_that_panics_the_compiled_pass_is_a_rejection_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Raised out of the parse process it would fail the batch, stop the worker and meet the note again at restart.
    def panic(*args: object, **kwargs: object) -> NoReturn:
        raise PanicException("index out of bounds")

    monkeypatch.setattr("processors.parse_stage.route_read", panic)
    data = b"# a note\n"
    raw = RawFile(
        path="inbox/jay/a.md",
        content=data,
        size=len(data),
        mtime=0.0,
        sha256=hashlib.sha256(data).hexdigest(),
    )
    params = RouteParams(axes=AXES, zone=SH, max_bytes=4 << 20, message_limit=8 << 20)
    routed = route_file(raw, params, datetime(2026, 9, 27, tzinfo=UTC), 1)
    assert routed.rejection is not None and "could not be routed (index out of bounds)" in routed.rejection
    assert (
        routed.error is not None and "PanicException" in routed.error
    )  # its traceback, logged by the worker
    assert routed.records  # the rejection goes on to the window: the note is never absent from a briefing


def _notes() -> list[tuple[str, bytes]]:
    """The example root's notes and 300 of the bench archive's."""
    notes = [
        (p.relative_to(EXAMPLE_ROOT).as_posix(), p.read_bytes()) for p in sorted(EXAMPLE_ROOT.rglob("*.md"))
    ]
    archive = Generator()
    for i in range(300):
        rel, text, _ = archive.note(i)
        notes.append((rel, text.encode()))
    return notes


def test_a_v2_raw_record_routes_to_the_documents_records_of_its_v1_twin() -> None:
    # A rolling upgrade: a topic holds both, a replay reads both; the documents records are the same bytes.
    params = RouteParams(axes=AXES, zone=SH, max_bytes=4 << 20, message_limit=8 << 20)
    seen = datetime(2026, 9, 27, tzinfo=UTC)
    for rel, data in _notes():
        raw = RawFile(
            path=rel, content=data, size=len(data), mtime=1.5e9, sha256=hashlib.sha256(data).hexdigest()
        )
        v1, v2 = raw.model_dump_json().encode(), raw_record(raw)
        assert len(v1) - len(v2) == len(base64.urlsafe_b64encode(data)) - len(data) - 12  # 12: magic, lengths
        one, two = route_value(v1, params, seen, 7), route_value(v2, params, seen, 7)
        assert documents_records([two], params) == documents_records([one], params), rel
        assert two == one


def test_a_damaged_v2_raw_record_is_unreadable_as_a_damaged_json_one_is() -> None:
    params = RouteParams(axes=AXES, zone=SH, max_bytes=4 << 20, message_limit=8 << 20)
    value = raw_record(RawFile(path="inbox/jay/a.md", content=b"# a\n", size=4, mtime=0.0, sha256="x"))
    routed = route_value(value[:-1], params, datetime(2026, 9, 27, tzinfo=UTC), 3)
    assert (
        routed.unreadable is not None
        and routed.unreadable.startswith("raw record v2:")
        and not routed.records
    )
    assert "cut or padded" in routed.unreadable
    json_cut = route_value(b'{"path":"inbox/jay/a.md"', params, datetime(2026, 9, 27, tzinfo=UTC), 3)
    assert json_cut.unreadable is not None and not json_cut.records
