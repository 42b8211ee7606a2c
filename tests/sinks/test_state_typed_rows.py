"""The documents and source_rows rows reach DuckDB as one Arrow batch (predigest_native.TypedColumns), not through
its appender: the same values stored, NULLs, times of any zone, booleans and lists included."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import duckdb
import pytest
from predigest_native import TypedColumns

from sinks.documents import DOCUMENT_COLUMNS, DOCUMENT_TYPES
from sinks.duck import micros
from tests.state_support import SH

TABLE = (
    "CREATE TABLE t (axis VARCHAR, path VARCHAR, sha256 VARCHAR, seq BIGINT, raw_offset BIGINT, "
    "event_time TIMESTAMPTZ, kind VARCHAR, current BOOLEAN)"
)
ROWS = [
    ("inference", "inbox/a.md", "ab" * 32, 1, 7, datetime(2026, 9, 27, 10, 0, tzinfo=SH), "inbox", True),
    (
        "推理",
        "inbox/推理.md",
        "cd" * 32,
        2,
        None,
        datetime(2026, 9, 27, 2, 0, 0, 1, tzinfo=UTC),
        "living",
        False,
    ),
    (
        "x",
        "😀.md",
        "ef" * 32,
        2**40,
        0,
        datetime(1969, 12, 31, 23, 59, 59, 5),  # noqa: DTZ001 - naive: read as UTC
        "baseline",
        True,
    ),
    (
        "y",
        "b.md",
        "0" * 64,
        3,
        2**62,
        datetime(2026, 3, 1, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
        "",
        False,
    ),
]


@pytest.fixture
def db() -> Iterator[duckdb.DuckDBPyConnection]:
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")  # as sinks.duck.connect sets it
        con.execute(TABLE)
        yield con


def test_documents_rows_are_stored_as_the_appender_stored_them(db: duckdb.DuckDBPyConnection) -> None:
    with db.appender("t") as appender:
        appender.append_rows(ROWS)
    by_appender = db.execute("SELECT * FROM t").fetchall()
    db.execute("DELETE FROM t")
    rows = [(*r[:5], micros(r[5]), *r[6:]) for r in ROWS]
    db.from_arrow(
        TypedColumns(list(DOCUMENT_COLUMNS), list(DOCUMENT_TYPES), list(zip(*rows, strict=True)))
    ).insert_into("t")
    assert db.execute("SELECT * FROM t").fetchall() == by_appender
    assert by_appender[1][4] is None


def test_lists_of_text_and_small_integers_come_back_as_given(db: duckdb.DuckDBPyConnection) -> None:
    ids = [("2101.00001", "2101.00002"), (), ["论文"]]
    columns = TypedColumns(
        ["ids", "n", "b"], ["text[]", "int32", "bool"], [ids, [1, -2, 3], [False, True, False]]
    )
    assert db.from_arrow(columns).fetchall() == [
        (list(i), n, b) for i, n, b in zip(ids, [1, -2, 3], [False, True, False], strict=True)
    ]


@pytest.mark.parametrize(
    ("types", "cells"),
    [
        (["int64"], [[None]]),
        (["int32"], [[2**31]]),
        (["bool"], [["yes"]]),
        (["text[]"], [[["a", 1]]]),
        (["uuid"], [[1]]),
    ],
)
def test_a_value_of_another_type_is_refused_before_duckdb_sees_it(
    types: list[str], cells: list[list[object]]
) -> None:
    with pytest.raises((TypeError, ValueError, OverflowError)):
        TypedColumns(["c"], types, cells)
