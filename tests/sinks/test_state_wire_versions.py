"""A rebuild replays whatever the documents topic retained: v4 records (facts carried) and v3 records (facts
worked out by the window stage) of the same notes leave the same state, row for row."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from processors.fan_out import route_raw
from processors.wire import decode_rows, encode_events
from sinks.state import Position, StateStore
from streams.settings import DEFAULT_AXES
from tests.processors.wire_v3 import encode_v3
from tests.state_support import raw_file

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "root"
TABLES = {
    "documents": "axis, path, sha256, raw_offset, event_time, kind, current",
    "contents": "*",
    "source_rows": "* EXCLUDE (vid)",
    "source_terms": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), term, n",
    "source_signatures": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), signature",
    "source_titles": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), * EXCLUDE (vid)",
}


def _values() -> list[tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]]:
    out = []
    for offset, p in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        raw = raw_file(p.relative_to(EXAMPLES).as_posix(), p.read_bytes(), mtime=1.0)
        events = route_raw(raw, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=NOW, raw_offset=offset)
        out.append((encode_events(events, {}), encode_v3(events, {})))
    return out


def _stored(path: Path, values: list[bytes]) -> dict[str, list[tuple[object, ...]]]:
    state = StateStore(path)
    items = [(row, Position("documents", 0, i)) for i, v in enumerate(values) for row in decode_rows(v)]
    state.apply_batch(items)
    state.apply_batch(items)  # replayed: changes nothing
    db = state._db  # the tables themselves are what must match
    tables = {
        t: db.execute(f"SELECT {cols} FROM {t} t ORDER BY ALL").fetchall() for t, cols in TABLES.items()
    }
    state.close()
    return tables


def test_v4_and_v3_records_of_the_same_notes_store_the_same_rows(tmp_path: Path) -> None:
    pairs = _values()
    v4 = [value for records, _ in pairs for _, value in records]
    v3 = [value for _, records in pairs for _, value in records]
    assert all(v.startswith(b"predigest.documents/v4\n") for v in v4)
    from_v4, from_v3 = _stored(tmp_path / "v4.duckdb", v4), _stored(tmp_path / "v3.duckdb", v3)
    assert all(from_v4[t] for t in ("source_rows", "source_terms", "source_signatures", "source_titles"))
    assert from_v4 == from_v3


def test_a_signature_duckdb_cannot_read_whole_is_not_stored_and_its_note_is(tmp_path: Path) -> None:
    (records, _), *_ = _values()
    _, value = records[0]
    magic, header, summary, facts, body = value.split(b"\n", 4)
    damaged = []
    for signature in ([-1], [1, "a", *range(126)], [1 << 64]):
        row = json.loads(facts)
        row[8] = json.dumps(signature)
        damaged.append(b"\n".join([magic, header, summary, json.dumps(row).encode(), body]))
    for i, v in enumerate(damaged):
        state = StateStore(tmp_path / f"{i}.duckdb")
        state.apply_batch([(row, Position("documents", 0, 0)) for row in decode_rows(v)])
        db = state._db
        assert db.execute("SELECT count(*) FROM source_rows").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM source_signatures").fetchone() == (0,)
        state.close()
