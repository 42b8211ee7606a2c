"""Builders for tests of the sinks: records through the state's real write path, a window's documents read back
straight from its tables, events, and a briefing to record or write."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import random
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingRequest
from processors.documents import parse_document
from processors.fan_out import DocumentEvent
from processors.models import AxisSpec, Briefing, Document, DocumentSummary, RawFile, WindowBounds
from processors.parse_stage import RouteParams, route_file
from processors.window import window_bounds
from processors.wire import DocumentRecord, EventHeader, decode_rows, load_document, store_document
from sinks.state import Position, StateStore
from sinks.summary_rows import with_rows
from sinks.unreadable import whole_document

SH = ZoneInfo("Asia/Shanghai")
# The record tests' parse time, and the example root they encode notes of.
NOW = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "root"


def raw_file(path: str, data: bytes, mtime: float = 0.0) -> RawFile:
    """The file the watcher would read: these bytes at this path, with their size and digest."""
    return RawFile(
        path=path, content=data, size=len(data), mtime=mtime, sha256=hashlib.sha256(data).hexdigest()
    )


def parsed(path: str, text: str) -> Document:
    return parse_document(raw_file(path, text.encode()), zone=SH)


def duckdb_limits(state: StateStore) -> tuple[str, int]:
    """The memory limit and thread count DuckDB holds for the state's connections, as it reports them."""
    reader = state.reader()
    try:
        row = reader._db.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')"
        ).fetchone()
    finally:
        reader.close()
    assert row is not None
    return str(row[0]), int(row[1])


def document_record(axis: str, doc: Document, raw_offset: int | None) -> DocumentRecord:
    header = EventHeader(
        type="document",
        path=doc.path,
        sha256=doc.sha256,
        seen_at=doc.event_time,
        axis=axis,
        raw_offset=raw_offset,
        kind=doc.kind,
        event_time=doc.event_time,
    )
    return DocumentRecord(header, store_document(doc))


def deletion_record(axis: str, path: str, when: datetime, raw_offset: int | None) -> DocumentRecord:
    return DocumentRecord(
        EventHeader(type="deletion", path=path, sha256="", seen_at=when, axis=axis, raw_offset=raw_offset)
    )


def put_document(
    state: StateStore, axis: str, doc: Document, *, raw_offset: int | None, position: Position | None = None
) -> bool:
    """Store one version as the window agent would; True if a briefing now sees it."""
    return state.apply_batch([(document_record(axis, doc, raw_offset), position)])[0]


def route_into(
    state: StateStore, raw: RawFile, params: RouteParams, seen_at: datetime, raw_offset: int
) -> None:
    """One raw record through the parse stage and the window agent's write (every axis's rows), as the worker does."""
    routed = route_file(raw, params, seen_at, raw_offset=raw_offset)
    state.apply_batch([(row, None) for _, value in routed.records for row in decode_rows(value)])


def delete_path(state: StateStore, axis: str, path: str, when: datetime, *, raw_offset: int | None) -> bool:
    """Apply a deletion as the window agent would; True unless the axis never held the path or holds a newer one."""
    return state.apply_batch([(deletion_record(axis, path, when, raw_offset), None)])[0]


# What a briefing of the window sees (docs/guarantees.md): current, undeleted versions dated in it, living documents
# apart; and the versions of the window a newer one replaced. Written here again, apart from the product's reads
# (sinks.window_reads), so that tests compare those with the tables themselves.
_IN_WINDOW = (
    "d.axis = ? AND d.current AND d.kind <> 'living' AND d.event_time >= ? AND d.event_time < ? AND NOT EXISTS "
    "(SELECT 1 FROM deletions x WHERE x.axis = d.axis AND x.path = d.path) AND NOT EXISTS "
    "(SELECT 1 FROM rejected r WHERE r.axis = d.axis AND r.path = d.path)"
)
_SUPERSEDED = "d.axis = ? AND NOT d.current AND d.kind <> 'living' AND d.event_time >= ? AND d.event_time < ?"


def _stored(state: StateStore, where: str, axis: str, window: WindowBounds) -> list[Document]:
    cursor = state._db.cursor()
    try:
        rows = cursor.execute(
            "SELECT c.path, d.axis, c.summary_json, c.body_zst, r.vid, r.summary_json FROM documents d JOIN "
            "contents c ON c.path = d.path AND c.sha256 = d.sha256 JOIN source_rows r ON r.path = c.path AND "
            f"r.sha256 = c.sha256 WHERE {where} ORDER BY d.event_time, d.path",
            [axis, window.start, window.end],
        ).fetchall()
        # Each summary rebuilt from its rows and `contents`' rest, as every whole-document read does (schema 8).
        whole = with_rows(cursor, rows)
    finally:
        cursor.close()
    return [whole_document(s, body) for _, _, s, body in whole]


def window_documents(state: StateStore, axis: str, window: WindowBounds) -> list[Document]:
    """The window's current documents, whole, in window order (event time, path)."""
    return _stored(state, _IN_WINDOW, axis, window)


def window_summaries(state: StateStore, axis: str, window: WindowBounds) -> list[DocumentSummary]:
    return [d.summary() for d in window_documents(state, axis, window)]


def superseded_summaries(state: StateStore, axis: str, window: WindowBounds) -> list[DocumentSummary]:
    """The window's versions that a newer one of their note replaced, in window order."""
    return [d.summary() for d in _stored(state, _SUPERSEDED, axis, window)]


def to_event(record: DocumentRecord) -> DocumentEvent:
    """The DocumentEvent a documents record was made from (the document decoded whole)."""
    document = load_document(record.stored) if record.stored is not None else None
    return DocumentEvent.model_construct(**record.header.fields(), document=document)


def empty_briefing(end: datetime, generated_at: datetime | None = None) -> Briefing:
    """The close briefing of inference's 24 h window ending at `end`, which held no document."""
    return assemble_briefing(
        BriefingRequest(
            axis=AxisSpec(name="inference"),
            trigger="close",
            window=window_bounds(end, timedelta(hours=24)),
            generated_at=generated_at or end,
            zone=SH,
            documents=[],
        )
    )


def as_previous_version(state: StateStore) -> None:
    """Rewrite the state's emissions as the version before packed bodies stored them (whole JSON and Markdown in
    the emissions row, none in emission_bodies), as a file upgraded in place from schema 5 held them."""
    db = state._db
    rows = db.execute("SELECT axis, window_end, trigger FROM emissions").fetchall()
    for axis, end, trigger in rows:
        record = state.emission_record(axis, end, trigger)
        assert record is not None
        db.execute(
            "UPDATE emissions SET briefing_json=?, markdown=? WHERE axis=? AND window_end=? AND trigger=?",
            [
                record.briefing_json.decode(),
                record.markdown.decode() if record.markdown else None,
                axis,
                end,
                trigger,
            ],
        )
    db.execute("DELETE FROM emission_bodies")
    db.execute("CHECKPOINT")


def with_keys(state: StateStore) -> StateStore:
    """The state file as releases before the keyless tables made it (sinks/schema.py): DuckDB holds each version's
    key, and undoing a commit means undoing its index too."""
    for table, key in (
        ("documents", "axis, path, sha256"),
        ("contents", "path, sha256"),
        ("source_rows", "path, sha256"),
    ):
        state._db.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({key})")
    return state


def store_large_notes(state: StateStore, every_seen: bool = True, until_raised: bool = False) -> int:
    """Up to 2 000 notes of ~80 KB of random text (nothing compresses it) in their front matter, through the real
    write path; how many. DuckDB compresses the summaries at a checkpoint, so they are what takes its memory; the
    bodies it stores as their frames, which need none: theirs is a line (80 KB more a note cost ~40 % of the CPU).

    `every_seen`: check each batch's outcomes (a commit DuckDB reports failed under a concurrent read may have
    been kept: run again, its notes are found held and reported unseen, neither lost nor stored twice).
    `until_raised`: stop after the batch that raised the state's memory limit (the rest would only repeat it)."""
    note = parsed("inbox/jay/2026-09-27-1000-n.md", "# note\nvLLM KV cache.")
    rng = random.Random(15)
    offset = 0
    for _ in range(10):
        batch = []
        for _ in range(200):
            text = base64.b64encode(rng.randbytes(60_000)).decode()
            doc = note.model_copy(update={"path": f"inbox/jay/n{offset}.md", "front_matter": {"x": text}})
            batch.append((document_record("inference", doc, offset), Position("p.documents", 0, offset)))
            offset += 1
        seen = state.apply_batch(batch)
        assert all(seen) or not every_seen, "every note is new: a briefing sees each"
        if until_raised and state._limits != state._configured:
            break
    return offset


def cached_mib(state: StateStore) -> float:
    """MiB of table blocks DuckDB holds in its buffer pool now."""
    row = state._db.execute(
        "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
    ).fetchone()
    return float(row[0] or 0) / (1 << 20) if row else 0.0


# ~70 MiB of blocks once read, as a large window's first reads leave in DuckDB's pool: pseudo-random integers that
# nothing compresses. md5 strings of 4M rows wrote as much in 2.2 s of CPU (~8 s of wall at load 15, a quarter of
# the 30 s test timeout); hashes in 0.65 s.
FILLER = "CREATE TABLE filler AS SELECT range AS i, hash(range) AS s FROM range(8500000)"

# A read that runs until it is interrupted, asleep in DuckDB (its interrupt is seen within a row's 10 ms): a sum
# over the same range held a core from the writes beside it, ~8 s of CPU a test (~40 % of its wall time at load 7).
ENDLESS_READ = "SELECT count(sleep_ms(10)) FROM range(1000000000000000) t(i)"


def a_long_read(cursor: duckdb.DuckDBPyConnection, started: threading.Event, ended: threading.Event) -> None:
    """A read that runs until interrupted on `cursor` (a thread's target): `started` as it is sent, `ended` once
    interrupted, or refused by a cursor closed before it began."""
    # Asleep (ENDLESS_READ), as the rules hold reads: a sum of 10^10 hashes spun DuckDB's threads beside the close
    # under test until its interrupt (200 closes: 5.2 s of CPU, 4.7 asleep; the unfixed close hangs on either).
    started.set()
    with contextlib.suppress(duckdb.Error):
        cursor.execute(ENDLESS_READ)
    ended.set()
