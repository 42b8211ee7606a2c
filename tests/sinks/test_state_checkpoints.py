"""The state's checkpoints write what was stored since the last one, not again the notes stored before it."""

from __future__ import annotations

import base64
import random
from pathlib import Path

from sinks.state import Position, StateStore
from tests.state_support import document_record, parsed


def _store(state: StateStore, first: int, count: int, rng: random.Random) -> None:
    """`count` new notes of ~4 KB of text each, in one batch, then a checkpoint (as past 16 MB of WAL)."""
    note = parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache.")
    batch = []
    for offset in range(first, first + count):
        text = base64.b64encode(rng.randbytes(3_000)).decode()
        doc = note.model_copy(update={"path": f"inbox/jay/n{offset}.md", "text": text, "sections": ()})
        batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
    assert all(state.apply_batch(batch))
    state._db.execute("CHECKPOINT")


def _text_blocks(state: StateStore) -> set[tuple[int, int]]:
    """Where the stored texts are: (block, offset) of each segment of their column."""
    rows = state._db.execute(
        "SELECT block_id, block_offset FROM pragma_storage_info('contents') "
        "WHERE column_name = 'body_zst' AND segment_type = 'BLOB' AND persistent"
    ).fetchall()
    return {(int(r[0]), int(r[1])) for r in rows}


def test_a_checkpoint_leaves_the_notes_stored_before_where_they_are(tmp_path: Path) -> None:
    """DuckDB's vacuum merged each checkpoint's new rows with the previous ones, writing every note again at
    one checkpoint in two (half the window agent's commit time at 10k notes): the state turns it off."""
    state = StateStore(tmp_path / "worker.duckdb")
    rng = random.Random(7)
    try:
        _store(state, 0, 300, rng)
        first = _text_blocks(state)
        assert first, "the first batch's texts are on disk"
        for n in range(1, 4):
            _store(state, n * 300, 300, rng)
            assert first <= _text_blocks(state), f"checkpoint {n + 1} wrote the first notes again"
        assert state.document_count() == 1_200
    finally:
        state.close()
