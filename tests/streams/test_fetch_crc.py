"""Fetched record batches checked natively (streams/fetch_crc.py, predigest_native.record_batches_intact): the same
records come out, and a damaged batch still stops the consumer with aiokafka's CorruptRecordException."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.consumer import fetcher
from aiokafka.errors import CorruptRecordException
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords, _MemoryRecordsPy
from aiokafka.structs import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from predigest_native import record_batches_intact

from streams.app import faust_app
from streams.fetch_crc import CheckedPartitionRecords, FetchedRecords, check_crcs_natively
from streams.settings import Settings

TP = TopicPartition("predigest.raw", 0)


def _batch(values: list[bytes], codec: int = 0, base: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(
            base + i, timestamp=1_700_000_000_000, key=b"k%d" % i, value=value, headers=[("h", b"v")]
        )
    return bytes(builder.build())


def _aiokafka_intact(data: bytes) -> bool:
    records = MemoryRecords(data)
    intact = True
    while records.has_next():
        intact &= records.next_batch().validate_crc()
    return intact


def _consume(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """What a consumer gets of a partition's fetched bytes, built as aiokafka's fetcher builds it."""
    records = fetcher.PartitionRecords(TP, fetcher.MemoryRecords(data), [], 0, None, None, True, 0)
    return [(r.offset, r.key, r.value) for r in records]


_BATCHES = st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=6), min_size=1, max_size=4)


def _fetched(batches: list[list[bytes]], codec: int) -> bytes:
    out, base = b"", 0
    for values in batches:
        out += _batch(values, codec, base)
        base += len(values)
    return out


@settings(max_examples=200, deadline=None)
@given(_BATCHES, st.sampled_from([0, 1]), st.data())
def test_a_damaged_byte_anywhere_a_crc_covers_is_found_as_aiokafka_finds_it(
    batches: list[list[bytes]], codec: int, data: st.DataObject
) -> None:
    fetched = _fetched(batches, codec)
    assert record_batches_intact(fetched) and _aiokafka_intact(fetched)
    # From the stored CRC on (offset 17 of a batch) every byte is checked; a batch's length and offset are not.
    at = data.draw(st.sampled_from([i for i in range(len(fetched)) if _within_crc(fetched, i)]))
    damaged = bytearray(fetched)
    damaged[at] ^= data.draw(st.integers(1, 255))
    assert record_batches_intact(bytes(damaged)) is False is _aiokafka_intact(bytes(damaged))


def _within_crc(fetched: bytes, at: int) -> bool:
    start = 0
    while start < len(fetched):
        end = start + 12 + int.from_bytes(fetched[start + 8 : start + 12], "big")
        if start <= at < end:
            return at >= start + 17
        start = end
    return False


def _starts(fetched: bytes) -> list[int]:
    starts, start = [], 0
    while start < len(fetched):
        starts.append(start)
        start += 12 + int.from_bytes(fetched[start + 8 : start + 12], "big")
    return starts


def _outcome(records: Any) -> tuple[list[tuple[int, bytes, bytes]], str | None]:
    """The records a consumer gets of a partition, then the exception that stops it (None when none does)."""
    got = []
    try:
        for r in records:
            got.append((r.offset, r.key, r.value))
    except Exception as e:  # compared by type: aiokafka's, whichever it is
        return got, type(e).__name__
    return got, None


@settings(max_examples=300, deadline=None)
@given(_BATCHES, st.sampled_from([0, 1]), st.data())
def test_whatever_the_damage_a_consumer_gets_what_aiokafka_alone_gives(
    batches: list[list[bytes]], codec: int, data: st.DataObject
) -> None:
    """Bytes the CRC does not cover damaged too (a batch's length, its magic), a cut anywhere, junk after."""
    fetched = _fetched(batches, codec)
    damaged = bytearray(fetched)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.sampled_from(_starts(fetched))) + data.draw(st.integers(0, 64))  # mostly a header
        if at >= len(damaged) or data.draw(st.booleans()):
            at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] ^= data.draw(st.integers(1, 255))
    damaged = damaged[: data.draw(st.integers(0, len(damaged)))] + data.draw(st.binary(max_size=80))
    one = bytes(damaged)  # one object for both: aiokafka's C records read a short batch's header past its end
    alone = CheckedPartitionRecords.__base__(TP, MemoryRecords(one), [], 0, None, None, True, 0)
    checked = CheckedPartitionRecords(TP, FetchedRecords(one), [], 0, None, None, True, 0)
    assert _outcome(checked) == _outcome(alone)


@pytest.mark.parametrize("length", [0xFFFF_FFF0, 0x8000_0000, 40, 13, 0])
def test_a_batch_whose_length_lies_stops_the_consumer_as_aiokafka_alone_stops_it(length: int) -> None:
    fetched = bytearray(_batch([b"a" * 100]) + _batch([b"b" * 100], base=1) + _batch([b"c"], base=2))
    second = _starts(bytes(fetched))[1]
    fetched[second + 8 : second + 12] = length.to_bytes(4, "big")
    one = bytes(fetched)
    alone = CheckedPartitionRecords.__base__(TP, MemoryRecords(one), [], 0, None, None, True, 0)
    checked = CheckedPartitionRecords(TP, FetchedRecords(one), [], 0, None, None, True, 0)
    outcome = _outcome(checked)
    assert outcome == _outcome(alone)
    assert outcome[0] == [(0, b"k0", b"a" * 100)] and outcome[1] == "CorruptRecordException"


def test_a_length_aiokafkas_python_records_read_as_negative_is_left_to_aiokafka() -> None:
    """Without its C extension (AIOKAFKA_NO_EXTENSIONS, no wheel) aiokafka slices a batch by its signed length: a
    negative one can reach back from the end and give records of a batch no CRC was checked for."""
    fetched = bytearray(_batch([b"a" * 100]) + _batch([b"b" * 100], base=1) + _batch([b"c" * 200], base=2))
    second = _starts(bytes(fetched))[1]
    fetched[second + 8 : second + 12] = (-(second + 12) - 50).to_bytes(4, "big", signed=True)
    one = bytes(fetched)
    intact = record_batches_intact(one)
    alone = CheckedPartitionRecords.__base__(TP, _MemoryRecordsPy(one), [], 0, None, None, True, 0)
    as_checked = CheckedPartitionRecords.__base__(TP, _MemoryRecordsPy(one), [], 0, None, None, not intact, 0)
    assert _outcome(as_checked) == _outcome(alone) == ([(0, b"k0", b"a" * 100)], "CorruptRecordException")


def test_aiokafkas_fetcher_still_builds_its_records_as_the_check_expects() -> None:
    """An aiokafka upgrade that changes this fails here, not quietly (the check never used, a flag misplaced)."""
    params = list(inspect.signature(CheckedPartitionRecords.__base__.__init__).parameters)
    assert len(params) == 9 and params[-2:] == ["check_crcs", "isolation_level"]
    # Looked up in the fetcher's module when a fetch is handled.
    built = fetcher.Fetcher._proc_fetch_request.__code__.co_names
    assert "MemoryRecords" in built and "PartitionRecords" in built


def test_a_batch_cut_off_by_the_fetch_size_is_left_as_aiokafka_leaves_it() -> None:
    fetched = _batch([b"a" * 100]) + _batch([b"b" * 100], base=1)
    assert record_batches_intact(fetched[:-10])
    assert record_batches_intact(b"")


def test_an_older_message_format_is_left_to_aiokafka() -> None:
    builder = LegacyRecordBatchBuilder(1, 0, batch_size=1 << 20)
    builder.append(0, timestamp=1, key=b"k", value=b"v")
    assert record_batches_intact(bytes(builder.build())) is False


@pytest.fixture
def native_check() -> Any:
    before = fetcher.MemoryRecords, fetcher.PartitionRecords
    check_crcs_natively()
    yield
    fetcher.MemoryRecords, fetcher.PartitionRecords = before


@pytest.mark.usefixtures("native_check")
def test_the_records_fetched_are_aiokafkas_and_a_damaged_batch_still_stops_the_consumer() -> None:
    fetched = _fetched([[b"x" * 50, b"y"], [b"z" * 3000]], 0)
    assert _consume(fetched) == [(0, b"k0", b"x" * 50), (1, b"k1", b"y"), (2, b"k0", b"z" * 3000)]
    damaged = bytearray(fetched)
    damaged[-1] ^= 1  # the second batch's last value
    records = fetcher.PartitionRecords(TP, fetcher.MemoryRecords(bytes(damaged)), [], 0, None, None, True, 0)
    assert next(records).value == b"x" * 50  # the intact first batch comes, as aiokafka alone gives it
    with pytest.raises(CorruptRecordException):
        list(records)


def test_the_worker_app_checks_its_fetches_natively(make_settings: Callable[..., Settings]) -> None:
    before = fetcher.MemoryRecords, fetcher.PartitionRecords
    try:
        faust_app(make_settings())
        assert (fetcher.MemoryRecords, fetcher.PartitionRecords) == (FetchedRecords, CheckedPartitionRecords)
    finally:
        fetcher.MemoryRecords, fetcher.PartitionRecords = before
