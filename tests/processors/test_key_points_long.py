"""Key points of a very long section: the same as before, without comparing every line with every other."""

from __future__ import annotations

import pytest

from processors import key_points as kp

LINES = [
    f"- {i}: vLLM 推理 serving: KV cache hit rate {i % 97}.{i % 7}% with speculative decoding."
    for i in range(10_000)
]


def all_points_then_cut(texts: list[str], limit: int) -> list[str]:
    """The reference: collect every point (the old, quadratic way), then keep the first `limit`."""
    return kp.key_points(texts, limit=10**9)[:limit]


def test_the_first_points_are_unchanged() -> None:
    texts = [
        "lead sentence. with 3.8× more. and 12% less\n" + "\n".join(LINES[:300]),
        "\n".join(LINES[300:400]),
    ]
    for limit in (1, 3, 4, 6, 8):
        assert kp.key_points(texts, limit=limit) == all_points_then_cut(texts, limit)


def test_a_ten_thousand_line_section_stops_reading_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # It took a minute when every line was checked against all points: the first `limit` points are final, so
    # the pass reads a handful of the 10,000 lines (counted, not timed).
    read: list[str] = []
    clean = kp.clean_line

    def counting(line: str) -> str:
        read.append(line)
        return clean(line)

    monkeypatch.setattr(kp, "clean_line", counting)
    points = kp.key_points(["\n".join(LINES)], limit=8)
    assert len(read) < 100, f"{len(read)} of 10,000 lines read for 8 points"
    monkeypatch.undo()
    assert points == kp.key_points(["\n".join(LINES[:8])], limit=8)  # the same first points as a short note
    assert len(points) == 8
