"""Dead letters keep the record whole with its origin; the failure limits stop a stage that fails systematically."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from processors.dead_letters import (
    DEAD_LETTER_REASONS,
    PREFIX,
    DeadLetter,
    FailureLimits,
    FailureTracker,
    dead_headers,
    read_dead_letter,
    reason_text,
    replay_headers,
    replays_of,
)

AT = datetime(2026, 9, 27, 14, 30, tzinfo=UTC)


def letter(**overrides: object) -> DeadLetter:
    values: dict[str, object] = {
        "topic": "predigest.raw",
        "partition": 3,
        "offset": 41,
        "stage": "raw",
        "reason": "unreadable",
        "error": "1 validation error for RawFile",
        "failed_at": AT,
        "key": b"inbox/jay/x.md",
        "value": b"\x00garbage\xff",
        "headers": (("trace", b"abc"),),
    }
    values.update(overrides)
    return DeadLetter(**values)  # type: ignore[arg-type]


@given(
    value=st.one_of(st.none(), st.binary(max_size=200)),
    key=st.one_of(st.none(), st.binary(max_size=20)),
    note=st.one_of(
        st.none(), st.integers(0, 999)
    ),  # the note of a v5 documents record, when one failed alone
)
def test_the_original_bytes_and_the_origin_survive_the_round_trip(
    value: bytes | None, key: bytes | None, note: int | None
) -> None:
    sent = letter(value=value, key=key, note=note)
    got = read_dead_letter(key, value, dead_headers(sent))
    assert got == sent


def test_a_long_error_keeps_its_end_and_a_record_without_our_headers_is_no_dead_letter() -> None:
    got = read_dead_letter(b"k", b"v", dead_headers(letter(error="x" * 5000 + "ValueError: the cause")))
    assert got is not None and got.error.endswith("ValueError: the cause") and len(got.error) < 2100
    assert read_dead_letter(b"k", b"v", [("trace", b"abc")]) is None
    assert read_dead_letter(b"k", b"v", [(PREFIX + "version", b"99")]) is None


def test_a_replayed_record_counts_its_replays_and_keeps_its_own_headers() -> None:
    headers = replay_headers(letter())
    assert ("trace", b"abc") in headers and replays_of(headers) == 1
    again = letter(headers=tuple(headers), replays=replays_of(headers))
    got = read_dead_letter(b"k", b"v", dead_headers(again))
    assert got is not None and got.replays == 1 and got.headers == (("trace", b"abc"),)


def test_more_failures_in_a_row_than_the_limit_trip_and_a_success_resets_the_count() -> None:
    t = FailureTracker(FailureLimits(max_consecutive=3, max_share=1.0, window=10))
    assert [t.failure() for _ in range(3)] == [None, None, None]
    t.success()
    assert [t.failure() for _ in range(3)] == [None, None, None]
    trip = t.failure()
    assert trip is not None and trip.rule == "consecutive" and trip.failures == 4


def test_a_share_over_the_limit_trips_once_the_window_is_full() -> None:
    t = FailureTracker(FailureLimits(max_consecutive=0, max_share=0.5, window=10))
    trips = {}
    for i in range(30):  # two failures in three: never more than two in a row
        if i % 3 == 0:
            t.success()
        elif (trip := t.failure()) is not None:
            trips[i] = trip
    first = min(trips)
    assert first == 10  # the first failure once ten records were seen: 7 of the last 10
    assert (trips[first].rule, trips[first].failures, trips[first].seen) == ("share", 7, 10)


def test_a_latched_stage_stops_at_its_first_failure_and_a_success_clears_it() -> None:
    limits = FailureLimits(max_consecutive=20, max_share=0.5, window=200)
    stopped = FailureTracker(limits, latched=True)
    trip = stopped.failure()
    assert trip is not None and trip.rule == "latched"
    fixed = FailureTracker(limits, latched=True)
    assert fixed.success() is True and fixed.success() is False
    assert fixed.failure() is None


def test_every_reason_says_what_it_means_in_each_language() -> None:
    for reason in DEAD_LETTER_REASONS:
        assert reason_text(reason, "en") != reason and reason_text(reason, "zh") != reason, reason
    # What the operator does about a command out of memory, before a replay.
    for lang in ("en", "zh"):
        said = reason_text("briefing_memory", lang)
        assert "PREDIGEST_DUCKDB__MEMORY_LIMIT_MIB" in said and "predigest dead replay" in said
        # A state write refused at its ceiling (StateMemoryError) ran at max_memory_limit_mib already: raising the
        # memory limit alone (it must stay below the ceiling) doubles it back to the same ceiling.
        assert "PREDIGEST_DUCKDB__MAX_MEMORY_LIMIT_MIB" in said
