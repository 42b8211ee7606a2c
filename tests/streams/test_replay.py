"""What a rebuild's replay says of the living documents it could not read back."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from processors.wire import StoredDocument
from processors.wire_frames import pack_body
from sinks.state import StateStore
from streams.replay import warn_missing_living
from streams.settings import Settings
from tests.state_support import document_record, parsed


@pytest.mark.parametrize("table", ["source_rows", "contents", "body", None])
def test_a_living_document_stored_but_unreadable_is_not_said_never_published(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, table: str | None
) -> None:
    # A rebuild replays the same record (a damaged body stays damaged): its warning said the file never arrived,
    # and sent the operator to publish a file the state holds, while the briefings say it is damaged.
    state = StateStore(tmp_path / "worker.duckdb")
    living = parsed("living/inference.md", "# inference.md v3\n\nvLLM serving\n")
    record = document_record("inference", living, 1)
    if (
        table == "body" and record.stored is not None
    ):  # a hand-made record: its frame does not unpack as UTF-8
        damaged = pack_body(b'{"text":"\xff","sections":[]}')
        record = replace(record, stored=StoredDocument(record.stored.summary_json, damaged, packed=True))
    state.apply_batch([(record, None)])
    if table in ("source_rows", "contents"):
        state._db.execute(f"DELETE FROM {table} WHERE path = ?", [living.path])
    with caplog.at_level(logging.WARNING, logger="streams.replay"):
        warn_missing_living(Settings(state_dir=tmp_path), state, ["inference", "risk"])
    state.close()
    said = {r.getMessage().split()[1]: r.getMessage() for r in caplog.records if r.name == "streams.replay"}
    assert "never published" in said["risk"]  # its living document never sent
    if table is None:
        assert "inference" not in said
    else:
        assert "never published" not in said["inference"]
        assert (
            "living/inference.md is stored, but its text is damaged and cannot be read" in said["inference"]
        )
