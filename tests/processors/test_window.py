from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from processors.briefing_names import briefing_basename
from processors.window import due_closes, in_window, next_close_fire, scheduled_close, window_bounds

SH = ZoneInfo("Asia/Shanghai")
CLOSE = time(22, 20)
GRACE = timedelta(minutes=5)


def test_window_edges() -> None:
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    w = window_bounds(end, timedelta(hours=24))
    assert w.start == datetime(2026, 9, 26, 22, 20, tzinfo=SH)
    assert in_window(w.start, w)
    assert not in_window(end, w)
    assert in_window(end - timedelta(microseconds=1), w)
    assert not in_window(w.start - timedelta(seconds=1), w)


def test_scheduled_close_is_aware() -> None:
    c = scheduled_close(date(2026, 9, 27), CLOSE, SH)
    assert c.utcoffset() == timedelta(hours=8)
    assert c.astimezone(UTC) == datetime(2026, 9, 27, 14, 20, tzinfo=UTC)


def test_due_closes_respects_grace() -> None:
    now = datetime(2026, 9, 27, 22, 24, tzinfo=SH)
    due = due_closes(None, now, CLOSE, SH, GRACE)
    assert due == [datetime(2026, 9, 26, 22, 20, tzinfo=SH)]
    now2 = datetime(2026, 9, 27, 22, 25, tzinfo=SH)
    assert due_closes(None, now2, CLOSE, SH, GRACE) == [datetime(2026, 9, 27, 22, 20, tzinfo=SH)]


def test_due_closes_catch_up_and_dedup() -> None:
    last = datetime(2026, 9, 24, 22, 20, tzinfo=SH)
    now = datetime(2026, 9, 27, 23, 0, tzinfo=SH)
    due = due_closes(last, now, CLOSE, SH, GRACE)
    assert due == [datetime(2026, 9, d, 22, 20, tzinfo=SH) for d in (25, 26, 27)]
    assert due_closes(due[-1], now, CLOSE, SH, GRACE) == []


def test_due_closes_caps_at_seven() -> None:
    last = datetime(2026, 9, 1, 22, 20, tzinfo=SH)
    now = datetime(2026, 9, 27, 23, 0, tzinfo=SH)
    due = due_closes(last, now, CLOSE, SH, GRACE)
    assert len(due) == 7
    assert due[-1] == datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    assert due == sorted(due)


def test_next_close_fire() -> None:
    now = datetime(2026, 9, 27, 22, 22, tzinfo=SH)
    assert next_close_fire(now, CLOSE, SH, GRACE) == datetime(2026, 9, 27, 22, 25, tzinfo=SH)
    now = datetime(2026, 9, 27, 22, 25, tzinfo=SH)
    assert next_close_fire(now, CLOSE, SH, GRACE) == datetime(2026, 9, 28, 22, 25, tzinfo=SH)
    utc_now = datetime(2026, 9, 27, 16, 0, tzinfo=UTC)  # 00:00 on the 28th in Shanghai
    assert next_close_fire(utc_now, CLOSE, SH, GRACE) == datetime(2026, 9, 28, 22, 25, tzinfo=SH)


def test_naming() -> None:
    end = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
    assert briefing_basename("inference", end, "close", SH) == "2026-09-27-inference-e1prep"
    flush = datetime(2026, 9, 27, 14, 15, tzinfo=UTC)
    assert briefing_basename("inference", flush, "flush", SH) == "2026-09-27-inference-e1prep-flush-2215"


def test_two_flushes_in_one_minute_have_two_names() -> None:
    first = datetime(2026, 9, 27, 21, 38, 5, tzinfo=SH)
    second = datetime(2026, 9, 27, 21, 38, 40, tzinfo=SH)
    names = {briefing_basename("inference", end, "flush", SH) for end in (first, second)}
    assert names == {"2026-09-27-inference-e1prep-flush-213805", "2026-09-27-inference-e1prep-flush-213840"}
    odd = datetime(2026, 9, 27, 21, 38, 40, 250_000, tzinfo=SH)  # an --end typed with a fraction
    assert (
        briefing_basename("inference", odd, "flush", SH) == "2026-09-27-inference-e1prep-flush-213840.250000"
    )
