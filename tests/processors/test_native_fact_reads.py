"""The decode's native check of a record's term counts and signature (predigest_native.fact_json_reads) refuses
exactly what it refused before, with pydantic, and what the store then failed a whole batch on: a term named
twice, a count beyond INTEGER. What it lets through, the store reads (FactRows) without error."""

from __future__ import annotations

import json
from typing import Annotated

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import FactRows, fact_json_reads
from pydantic import Field, StrictInt, StrictStr, TypeAdapter

# processors.source_facts.load_facts's checks before the native one (strict JSON, as pydantic reads it).
_TERMS: TypeAdapter[dict[str, int]] = TypeAdapter(dict[StrictStr, StrictInt])
_SIGNATURE: TypeAdapter[list[int]] = TypeAdapter(list[Annotated[StrictInt, Field(ge=0, lt=1 << 64)]])
INTEGER = range(-(2**31), 2**31)


def _each_key_once(pairs: list[tuple[str, object]]) -> dict[str, object]:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a key twice")
    return dict(pairs)


def read_before(terms: str, signature: str) -> bool:
    """Whether pydantic took them, and the store's MAP(VARCHAR, INTEGER) cast would have."""
    try:
        if terms != "null":
            counts = _TERMS.validate_json(terms)
            json.loads(terms, object_pairs_hook=_each_key_once)
            if not all(n in INTEGER for n in counts.values()):
                return False
        if signature != "null":
            _SIGNATURE.validate_json(signature)
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True


def _stored_terms(terms: str) -> list[tuple[object, ...]] | None:
    try:
        rows = FactRows.terms([1], [terms])
    except ValueError:
        return None
    with duckdb.connect() as db:
        return db.from_arrow(rows).fetchall()


def assert_read_as_before(terms: str, signature: str = "null") -> None:
    reads = fact_json_reads(terms, signature)
    assert reads == read_before(terms, signature)
    if reads and signature == "null":  # the store takes what the decode let through, and only that
        counts = {} if terms == "null" else _TERMS.validate_json(terms)
        assert _stored_terms(terms) == [(1, k, n, place) for place, (k, n) in enumerate(counts.items())]
    elif signature == "null":
        assert _stored_terms(terms) is None


TERMS = [
    '{"kv":1,"cache":2}',
    '{"a":-2147483648}',  # INTEGER's least
    '{"a":2147483647}',
    '{"a":-2147483649}',
    '{"a":2147483648}',
    '{"a":-0}',
    '{"a":01}',  # leading zeros: not JSON
    '{"a":-01}',
    '{"a":00}',
    '{"a":0}',
    '{"a":-}',
    '{"a\nb":1}',  # a raw control character in a key
    '{"a\x00":1}',
    '{"a\x1f":1}',
    '{"a\x7f":1}',  # DEL is no control character to JSON
    '{"\\u0000":1}',
    '{"\\u+041":1}',  # a sign where a hex digit goes
    '{"\\u-041":1}',
    '{"\\u 041":1}',
    '{"\\u004G":1}',
    '{"\\ud800":1}',
    '{"\\udc00":1}',
    '{"\\ud83d\\u0041":1}',
    '{"\\uDBFF\\uDFFF":1}',
    '{"a":1,"a":2}',  # a term twice
    '{"caf\\u00e9":1,"café":2}',
    '{"a":1,"b":2,"a":1}',
    '{"\\/":1,"/":1}',
    '{"A":1,"a":1}',
    "null",
    " null",
    "null ",
    "\tnull\n",
    "nul",
    "nullx",
    "{}",
    " { } ",
    '{"a" :\t1 }',
    '{"a":\x0b1}',
    '{"a":1}x',
    '{"a":1,}',
    "{,}",
    '{"a":true}',
    '{"a":null}',
    '{"a":1e0}',
    '{"a":1.0}',
    '{"a":"1"}',
    "[]",
    "",
    '{"a":1}\n',
]
SIGNATURES = [
    "[1,2,3]",
    "[]",
    "[01,2]",
    "[1,-0]",
    "[-1]",
    "[1.0,2]",
    "[1e0]",
    "[true]",
    "[null]",
    "[18446744073709551615]",
    "[18446744073709551616]",
    "null",
    " null",
    "null ",
    "[1]\n",
    " [ 1 , 2 ] ",
    "[1,]",
    "[1 2]",
    "{}",
]


@pytest.mark.parametrize("terms", TERMS)
def test_term_counts_read_as_pydantic_and_the_store_read_them(terms: str) -> None:
    assert_read_as_before(terms)


@pytest.mark.parametrize("signature", SIGNATURES)
def test_a_signature_reads_as_pydantic_read_it(signature: str) -> None:
    assert fact_json_reads("null", signature) == read_before("null", signature)


# The characters JSON's grammar turns on, a few others, and a sign and spaces where they may not go.
_ALPHABET = '{}[]":,-+0123456789.eE \t\n\r\x0b\x00\x1f\\/ubfnrtlaAé推😀'


def _mangled(draw: st.DrawFn, text: str) -> str:
    """The text, or a character of it changed, dropped or doubled, or a character put in."""
    if not text or draw(st.booleans()):
        return text
    at = draw(st.integers(0, len(text) - 1))
    c = draw(st.sampled_from(_ALPHABET))
    return draw(
        st.sampled_from(
            [
                text[:at] + c + text[at + 1 :],
                text[:at] + text[at + 1 :],
                text[:at] + text[at:] + text[at],
                text[:at] + c + text[at:],
            ]
        )
    )


@st.composite
def term_counts(draw: st.DrawFn) -> str:
    keys = st.text(st.sampled_from('aé推😀\\"/\x00\n'), max_size=3)
    pairs = draw(st.lists(st.tuples(keys, st.integers(-(2**32), 2**32)), max_size=5))
    again: bool = draw(st.booleans())
    if pairs and again:  # a term again, perhaps escaped otherwise
        term: tuple[str, int] = draw(st.sampled_from(pairs))
        pairs.append((term[0], 1))
    ascii_ = draw(st.booleans())
    sep = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", "\n:\r")]))
    body = sep[0].join(f"{json.dumps(k, ensure_ascii=ascii_)}{sep[1]}{n}" for k, n in pairs)
    return _mangled(draw, "{" + body + "}")


@st.composite
def signatures(draw: st.DrawFn) -> str:
    values = draw(st.lists(st.integers(-2, 2**64), max_size=5))
    return _mangled(draw, json.dumps(values, separators=draw(st.sampled_from([(",", ":"), (", ", ": ")]))))


@settings(max_examples=400, deadline=None)
@given(st.one_of(term_counts(), st.text(st.sampled_from(_ALPHABET), max_size=12)))
def test_any_term_counts_read_as_pydantic_and_the_store_read_them(terms: str) -> None:
    assert_read_as_before(terms)


@settings(max_examples=300, deadline=None)
@given(st.one_of(signatures(), st.text(st.sampled_from(_ALPHABET), max_size=12)))
def test_any_signature_reads_as_pydantic_read_it(signature: str) -> None:
    assert fact_json_reads("null", signature) == read_before("null", signature)
