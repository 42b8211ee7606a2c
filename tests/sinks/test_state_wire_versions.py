"""A rebuild replays whatever the documents topic retained: v7 and v6 records, v5 records (a batch's notes of one partition in one),
v4 records (facts carried) and v3 records (facts worked out by the window stage) of the same notes leave the
same state, row for row."""

from __future__ import annotations

from pathlib import Path

from processors.fan_out import route_read
from processors.wire import decode_rows, encode_events
from processors.wire_frames import pack_notes
from sinks.state import Position, StateStore
from streams.ownership import key_partition
from streams.settings import DEFAULT_AXES
from tests.processors.wire_v3 import encode_v3
from tests.processors.wire_v5 import pack_records
from tests.processors.wire_v6 import pack_v6
from tests.state_support import EXAMPLES, NOW, SH, raw_file

TABLES = {
    "documents": "axis, path, sha256, raw_offset, event_time, kind, current",
    "contents": "*",
    "source_rows": "* EXCLUDE (vid)",
    "source_terms": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), term, n",
    "source_signatures": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), signature",
    "source_titles": "(SELECT path || sha256 FROM source_rows r WHERE r.vid = t.vid), * EXCLUDE (vid)",
}


Records = list[tuple[bytes, bytes]]
PARTITIONS = {a.name: key_partition(a.name, 3) for a in DEFAULT_AXES}


def _values(partitions: dict[str, int]) -> list[tuple[Records, Records]]:
    out = []
    for offset, p in enumerate(sorted(EXAMPLES.rglob("*.md"))):
        raw = raw_file(p.relative_to(EXAMPLES).as_posix(), p.read_bytes(), mtime=1.0)
        events = route_read(raw, DEFAULT_AXES, zone=SH, max_bytes=4 << 20, seen_at=NOW, raw_offset=offset)[0]
        out.append((encode_events(events, partitions), encode_v3(events, partitions)))
    return out


def _stored(path: Path, records: Records, partitions: dict[str, int]) -> dict[str, list[tuple[object, ...]]]:
    """The tables after the records are applied, each on its key's partition at the next offset there."""
    state = StateStore(path)
    offsets: dict[int, int] = {}
    items = []
    for key, value in records:
        p = partitions.get(key.decode(), 0)
        offsets[p] = offsets.get(p, -1) + 1
        items += [(row, Position("documents", p, offsets[p], i)) for i, row in enumerate(decode_rows(value))]
    state.apply_batch(items)
    state.apply_batch(items)  # replayed: changes nothing
    db = state._db  # the tables themselves are what must match
    tables = {
        t: db.execute(f"SELECT {cols} FROM {t} t ORDER BY ALL").fetchall() for t, cols in TABLES.items()
    }
    state.close()
    return tables


def test_v4_and_v3_records_of_the_same_notes_store_the_same_rows(tmp_path: Path) -> None:
    pairs = _values({})
    v4 = [record for records, _ in pairs for record in records]
    v3 = [record for _, records in pairs for record in records]
    assert all(v.startswith(b"predigest.documents/v4\n") for _, v in v4)
    from_v4, from_v3 = _stored(tmp_path / "v4.duckdb", v4, {}), _stored(tmp_path / "v3.duckdb", v3, {})
    assert all(from_v4[t] for t in ("source_rows", "source_terms", "source_signatures", "source_titles"))
    assert from_v4 == from_v3


def test_v5_records_of_a_batch_across_partitions_store_what_its_v4_records_do(tmp_path: Path) -> None:
    v4 = [record for records, _ in _values(PARTITIONS) for record in records]
    v5 = pack_records(v4, PARTITIONS, 384 * 1024)
    assert len(v5) == len(set(PARTITIONS.values())) < len(v4) // 10
    from_v5 = _stored(tmp_path / "v5.duckdb", v5, PARTITIONS)
    from_v4 = _stored(tmp_path / "v4.duckdb", v4, PARTITIONS)
    assert len(from_v4["documents"]) > len(from_v4["contents"])  # a row per axis, not only the first
    assert from_v5 == from_v4


def test_v6_records_of_a_batch_across_partitions_store_what_its_v4_records_do(tmp_path: Path) -> None:
    v4 = [record for records, _ in _values(PARTITIONS) for record in records]
    v6 = pack_v6(v4, PARTITIONS, 384 * 1024)
    assert len(v6) == len(set(PARTITIONS.values())) < len(v4) // 10
    assert all(v.startswith(b"predigest.documents/v6\n") for _, v in v6)
    assert sum(len(v) for _, v in v6) < sum(len(v) for _, v in v4) / 3  # compressed
    assert _stored(tmp_path / "v6.duckdb", v6, PARTITIONS) == _stored(tmp_path / "v4.duckdb", v4, PARTITIONS)


def test_v7_records_store_each_body_as_the_frame_the_parse_processes_made_as_v6_records_do(
    tmp_path: Path,
) -> None:
    """The worker compresses an older record's bodies itself, as a parse process does: a v6 backlog replayed
    into this version leaves the state a v7 one does, byte for byte (contents.body_zst included)."""
    v4 = [record for records, _ in _values(PARTITIONS) for record in records]
    v7 = pack_notes(v4, PARTITIONS, 384 * 1024)
    assert len(v7) == len(set(PARTITIONS.values())) < len(v4) // 10
    assert all(v.startswith(b"predigest.documents/v7\n") for _, v in v7)
    from_v7 = _stored(tmp_path / "v7.duckdb", v7, PARTITIONS)
    assert from_v7 == _stored(tmp_path / "v6.duckdb", pack_v6(v4, PARTITIONS, 384 * 1024), PARTITIONS)
    assert from_v7 == _stored(tmp_path / "v4.duckdb", v4, PARTITIONS)
