"""near_candidates reads a producer's Arrow C stream (predigest_native, native/src/near_pairs.rs): a stream whose
NULL count is unknown (-1, as the interface allows) or whose list offsets point past its items is refused, never
read. DuckDB does not hand such a stream over; a hand-made one (ctypes) does."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest
from predigest_native import near_candidates


class _Schema(ctypes.Structure):
    pass


_SchemaRelease = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Schema))
_Schema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(_Schema))),
    ("dictionary", ctypes.POINTER(_Schema)),
    ("release", _SchemaRelease),
    ("private_data", ctypes.c_void_p),
]


class _Array(ctypes.Structure):
    pass


_ArrayRelease = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Array))
_Array._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_Array))),
    ("dictionary", ctypes.POINTER(_Array)),
    ("release", _ArrayRelease),
    ("private_data", ctypes.c_void_p),
]


class _Stream(ctypes.Structure):
    pass


_GetSchema = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Schema))
_GetNext = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream), ctypes.POINTER(_Array))
_LastError = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_Stream))
_StreamRelease = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Stream))
_Stream._fields_ = [
    ("get_schema", _GetSchema),
    ("get_next", _GetNext),
    ("get_last_error", _LastError),
    ("release", _StreamRelease),
    ("private_data", ctypes.c_void_p),
]


def _unset_schema(schema: Any) -> None:
    schema.contents.release = _SchemaRelease()


_release_schema = _SchemaRelease(_unset_schema)


def _unset_array(array: Any) -> None:
    array.contents.release = _ArrayRelease()


_release_array = _ArrayRelease(_unset_array)


def _unset_stream(stream: Any) -> None:
    stream.contents.release = _StreamRelease()


_release_stream = _StreamRelease(_unset_stream)


def _schema(fmt: bytes, children: list[_Schema]) -> _Schema:
    kids = (ctypes.POINTER(_Schema) * len(children))(*(ctypes.pointer(c) for c in children))
    schema = _Schema(format=fmt, n_children=len(children), children=kids, release=_release_schema)
    schema._kids = (kids, children)
    return schema


def _array(length: int, buffers: list[object], children: list[_Array], null_count: int = 0) -> _Array:
    bufs = (ctypes.c_void_p * len(buffers))(*(None if b is None else ctypes.addressof(b) for b in buffers))  # type: ignore[arg-type]
    kids = (ctypes.POINTER(_Array) * len(children))(*(ctypes.pointer(c) for c in children))
    array = _Array(
        length=length,
        null_count=null_count,
        n_buffers=len(buffers),
        n_children=len(children),
        buffers=bufs,
        children=kids,
        release=_release_array,
    )
    array._keep = (bufs, kids, buffers, children)
    return array


class _Rows:
    """Two rows (pos 0 and 1) of equal 128-slot signatures, as one hand-made Arrow batch."""

    def __init__(
        self, *, validity: int | None, null_count: int, items: int, fails: bytes | None = None
    ) -> None:
        self.values = (ctypes.c_uint64 * 256)(*([7] * 256))
        self.offsets = (ctypes.c_int32 * 3)(0, 128, 256)
        self.positions = (ctypes.c_int64 * 2)(0, 1)
        self.valid = None if validity is None else (ctypes.c_uint8 * 1)(validity)
        item_array = _array(items, [None, self.values], [])
        lists = _array(2, [self.valid, self.offsets], [item_array], null_count)
        self.batch = _array(2, [None], [_array(2, [None, self.positions], []), lists])
        self.schema = _schema(b"+s", [_schema(b"l", []), _schema(b"+l", [_schema(b"L", [])])])
        self.sent = False

        def get_schema(_stream: Any, out: Any) -> int:
            ctypes.memmove(out, ctypes.addressof(self.schema), ctypes.sizeof(_Schema))
            return 0

        def get_next(_stream: Any, out: Any) -> int:
            if fails is not None:
                return 5  # EIO
            if self.sent:
                out.contents.release = _ArrayRelease()
            else:
                ctypes.memmove(out, ctypes.addressof(self.batch), ctypes.sizeof(_Array))
                self.sent = True
            return 0

        self.error = None if fails is None else ctypes.create_string_buffer(fails)

        def last_error(_stream: Any) -> int | None:
            return None if self.error is None else ctypes.addressof(self.error)

        self.callbacks = (_GetSchema(get_schema), _GetNext(get_next), _LastError(last_error))
        self.stream = _Stream(
            get_schema=self.callbacks[0],
            get_next=self.callbacks[1],
            get_last_error=self.callbacks[2],
            release=_release_stream,
        )

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.stream), b"arrow_array_stream", None)


def test_a_well_formed_hand_made_stream_is_read() -> None:
    assert near_candidates(_Rows(validity=None, null_count=0, items=256), 21, 6, 103) == [(1, 0)]


def test_a_null_behind_an_unknown_null_count_is_refused() -> None:
    """null_count -1 (not computed) with a validity bitmap whose row 1 is NULL: its slots were read as values."""
    with pytest.raises(ValueError, match="a NULL"):
        near_candidates(_Rows(validity=0b01, null_count=-1, items=256), 21, 6, 103)


def test_list_offsets_past_the_items_are_refused() -> None:
    """The second list ends at item 256 of 128: its slots were read past the items' end."""
    with pytest.raises(ValueError, match="out of its items"):
        near_candidates(_Rows(validity=None, null_count=0, items=128), 21, 6, 103)


def test_a_batch_the_producer_fails_says_why() -> None:
    """DuckDB's reason (an interrupt at the state's close, memory, a cast) was dropped for "could not be read"."""
    with pytest.raises(ValueError, match="could not be read: INTERRUPT Error: Interrupted!"):
        near_candidates(
            _Rows(validity=None, null_count=0, items=256, fails=b"INTERRUPT Error: Interrupted!"), 21, 6, 103
        )
