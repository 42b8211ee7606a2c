"""A version's term counts and signature reach `source_terms` and `source_signatures` as DuckDB's JSON casts read
them before: the state now reads their JSON into Arrow rows itself (predigest_native.FactRows)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import duckdb
import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import FactRows

# What the state ran before: BM25 and the near-duplicate search read what these stored.
CAST_TERMS = (
    "SELECT vid, unnest(map_keys(m)), unnest(map_values(m)) FROM (SELECT "
    "unnest($1) AS vid, unnest($2)::JSON::MAP(VARCHAR, INTEGER) AS m)"
)
CAST_SIGNATURES = (
    "SELECT vid, s FROM (SELECT unnest($1) AS vid, TRY_CAST(unnest($2)::JSON AS UBIGINT[]) AS s) "
    "WHERE len(s) = $3"
)


@pytest.fixture(scope="module")
def db() -> Iterator[duckdb.DuckDBPyConnection]:
    with duckdb.connect() as con:
        yield con


def stored_terms(db: duckdb.DuckDBPyConnection, counts: list[str | bytes]) -> list[tuple[object, ...]]:
    """(vid, term, n) of each row; each row's k checked to be its term's place among its version's (schema 8)."""
    rows = db.from_arrow(FactRows.terms(list(range(len(counts))), counts)).fetchall()
    places = [sum(1 for r in rows[:i] if r[0] == row[0]) for i, row in enumerate(rows)]
    assert [r[3] for r in rows] == places
    return [r[:3] for r in rows]


def cast_terms(db: duckdb.DuckDBPyConnection, counts: list[str | bytes]) -> list[tuple[object, ...]]:
    texts = [c.decode() if isinstance(c, bytes) else c for c in counts]
    return db.execute(CAST_TERMS, [list(range(len(texts))), texts]).fetchall()


TERMS = [
    '{"kv":3,"cache":1}',
    '{"推理":2,"思维链":-1}',
    "null",
    "{}",
    ' { "a" : 1 , "b":2 } ',
    '{"say \\"hi\\"\\\\ \\/ \\n\\t\\b\\f\\r":5}',  # every escape JSON has
    '{"caf\\u00e9 \\u4e00 \\ud83d\\ude00":7}',  # \u escapes, a surrogate pair among them
    '{"2147483647":2147483647,"min":-2147483648}',  # INTEGER's whole range
]


def test_term_counts_are_the_rows_duckdbs_cast_made(db: duckdb.DuckDBPyConnection) -> None:
    assert stored_terms(db, list(TERMS)) == cast_terms(db, list(TERMS))
    as_bytes: list[str | bytes] = [t.encode() for t in TERMS]
    assert stored_terms(db, as_bytes) == cast_terms(db, list(TERMS))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(min_size=1), st.integers(-(2**31), 2**31 - 1)), min_size=1))
def test_any_term_counts_python_writes_are_read_as_duckdb_read_them(counts: list[dict[str, int]]) -> None:
    texts: list[str | bytes] = [pydantic_core.to_json(c).decode() for c in counts]
    texts += [json.dumps(c) for c in counts]  # an older writer's \u escapes
    with duckdb.connect() as con:
        assert stored_terms(con, texts) == cast_terms(con, texts)


@pytest.mark.parametrize(
    "bad",
    ['{"a":1.5}', '{"a":"1"}', '{"a":2147483648}', "[1]", '{"a":1', '{"\\ud800":1}', '{"a":1,"\\u0061":2}'],
)
def test_term_counts_of_another_shape_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="term counts of version 7"):
        FactRows.terms([7], [bad])


SIGNATURES = [
    "[1,2,3]",
    "[0, 18446744073709551615, 42]",  # the whole u64 range
    "null",
    "[1,2]",  # another length: left out
    "[]",
]


def test_signatures_are_the_rows_duckdbs_try_cast_kept(db: duckdb.DuckDBPyConnection) -> None:
    vids = list(range(len(SIGNATURES)))
    rows = db.from_arrow(FactRows.signatures(vids, list(SIGNATURES), 3)).fetchall()
    assert rows == db.execute(CAST_SIGNATURES, [vids, list(SIGNATURES), 3]).fetchall()
    assert [vid for vid, _ in rows] == [0, 1]


@pytest.mark.parametrize(
    "bad", ["[1,-2,3]", "[1,18446744073709551616,3]", "[1,2.5,3]", '[1,"2",3]', "[1,2,3"]
)
def test_a_signature_with_a_value_that_is_no_u64_is_left_out(bad: str) -> None:
    # The cast kept such a list with a NULL in it, a signature no near-duplicate search can compare; none is
    # written (the decode refuses a record whose signature is not u64s, processors.source_facts.load_facts).
    assert len(FactRows.signatures([1], [bad], 3)) == 0


def test_no_rows_make_an_empty_batch(db: duckdb.DuckDBPyConnection) -> None:
    assert len(FactRows.terms([1], ["null"])) == 0
    assert db.from_arrow(FactRows.terms([], [])).fetchall() == []
    assert db.from_arrow(FactRows.signatures([1], ["null"], 128)).fetchall() == []
