"""The worker's fetched record batches checked for corruption with the CPU's CRC instruction, not aiokafka's table.

aiokafka (0.14) checks each batch's CRC-32C as it unpacks it, table-driven in its C extension (~2 GB/s): ~13 µs a
note of the worker's consumer thread, which fetches a note's raw and documents bytes (~25 KB). Here a fetched
partition's bytes are checked whole (`record_batches_intact`, ~28 GB/s) as aiokafka takes them from the response;
when every batch passes, aiokafka skips its own check of them; otherwise it checks them as before and raises its
`CorruptRecordException` at the batch that fails (docs/performance.md, "The documents topic's bytes, end to end").
"""

from __future__ import annotations

from typing import Any

from aiokafka.consumer import fetcher
from aiokafka.record.memory_records import MemoryRecords
from predigest_native import record_batches_intact

_AIOKAFKA_RECORDS = fetcher.PartitionRecords


class FetchedRecords(MemoryRecords):  # type: ignore[misc]  # aiokafka is untyped
    """aiokafka's records of one fetched partition, keeping its bytes for the check."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.data = data


class CheckedPartitionRecords(_AIOKAFKA_RECORDS):  # type: ignore[misc,valid-type]
    """aiokafka's iterator over a fetched partition, its CRC check done once natively when every batch passes."""

    def __init__(
        self, tp: Any, records: Any, aborted: Any, offset: int, *coders_check_isolation: Any
    ) -> None:
        *coders, check_crcs, isolation_level = coders_check_isolation  # as aiokafka's fetcher passes them
        if check_crcs and isinstance(records, FetchedRecords) and record_batches_intact(records.data):
            check_crcs = False
        super().__init__(tp, records, aborted, offset, *coders, check_crcs, isolation_level)


def check_crcs_natively() -> None:
    """Make every aiokafka consumer of this process check fetched batches natively from now on (idempotent)."""
    fetcher.MemoryRecords = FetchedRecords
    fetcher.PartitionRecords = CheckedPartitionRecords
