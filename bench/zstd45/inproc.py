"""The parse processes' frames in process at zstd levels 1-3 and with a trained dictionary: bytes and µs a note.

`python -m bench.zstd45.inproc ROOT [ROUNDS [DICT]]`: the root's notes (bench/archive.py; 10k generated at ROOT when
it is missing) routed once in chunks of 63, as the pool cuts a batch of 500 over 2 processes, then each chunk's
records packed as a parse process packs them (processors.wire_frames.pack_frames), thread CPU, rounds alternated.
The dictionary runs (the `zstandard` package, not a project dependency: its own libzstd 1.5.7) train on the first
1 000 notes' frame inputs (the 64 KiB one written to DICT, the ingest's ZSTD45_DICT) and pack the other notes;
their baseline is the same package without a dictionary. Bytes are split into the rests' frames and the bodies'.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bench import archive
from processors import wire_frames
from processors.parse_stage import RouteParams, route_values
from processors.raw_record import raw_record_of
from processors.wire_frames import pack_frames
from streams.settings import DEFAULT_AXES

CHUNK = 63
TRAIN = 1000
Records = list[tuple[bytes, bytes]]
Pack = Callable[[bytes | memoryview], bytes]
COMPRESSED, PACK_BODY = wire_frames.compressed, wire_frames.pack_body


def _chunks(root: Path, params: RouteParams) -> list[Records]:
    values = []
    for p in sorted(p for p in root.rglob("*.md") if p.is_file()):
        content, st = p.read_bytes(), p.stat()
        values.append(raw_record_of(str(p.relative_to(root)), content, len(content), st.st_mtime, "0" * 64))
    seen = datetime(2026, 12, 7, tzinfo=UTC)
    out = []
    for at in range(0, len(values), CHUNK):
        routed = route_values([(v, at + i) for i, v in enumerate(values[at : at + CHUNK])], params, seen)
        out.append([rec for r in routed for rec in r.records])
    return out


def _packed(chunks: list[Records], params: RouteParams, rests: Pack, bodies: Pack) -> tuple[float, int, int]:
    """(thread seconds, the rests' frames' bytes, the bodies') of packing every chunk with these compressors."""
    wire_frames.compressed, wire_frames.pack_body = rests, bodies  # type: ignore[assignment]
    try:
        t = time.thread_time()
        frames = [f for c in chunks for f in pack_frames(c, params.partitions, params.record_bytes)]
        secs = time.thread_time() - t
    finally:
        wire_frames.compressed, wire_frames.pack_body = COMPRESSED, PACK_BODY
    return secs, sum(len(f.data) for f in frames), sum(len(b) for f in frames for b in f.bodies)


Samples = list[bytes | bytearray | memoryview]


def _inputs(chunks: list[Records], params: RouteParams) -> tuple[Samples, Samples]:
    """The bytes each frame compresses, as pack_frames cuts them: (the rests, the bodies)."""
    rests: Samples = []
    bodies: Samples = []

    def keeper(into: Samples) -> Pack:
        def keep(data: bytes | memoryview) -> bytes:
            into.append(bytes(data))
            return b""

        return keep

    _packed(chunks, params, keeper(rests), keeper(bodies))
    return rests, bodies


def _level(level: int) -> Pack:
    def pack(data: bytes | memoryview) -> bytes:
        wire_frames.LEVEL = level
        try:
            return COMPRESSED(data)
        finally:
            wire_frames.LEVEL = 1

    return pack


def _variants(chunks: list[Records], params: RouteParams, save: Path | None) -> dict[str, tuple[Pack, Pack]]:
    out: dict[str, tuple[Pack, Pack]] = {f"level {n}": (_level(n), _level(n)) for n in (1, 2, 3)}
    try:
        import zstandard  # type: ignore[import-not-found]  # not a dependency: installed by hand for this measure
    except ImportError:
        print("no zstandard: the dictionary runs skipped")
        return out

    def cctx(level: int, d: Any = None) -> Pack:
        c = zstandard.ZstdCompressor(level=level, dict_data=d, write_content_size=True)
        return c.compress

    rests, bodies = _inputs(chunks[: TRAIN // CHUNK], params)
    both = {size: zstandard.train_dictionary(size, rests + bodies) for size in (16 << 10, 64 << 10)}
    if save is not None:
        save.write_bytes(both[64 << 10].as_bytes())
    rest_only = zstandard.train_dictionary(16 << 10, rests)
    out["zstandard L1"] = (cctx(1), cctx(1))
    out["zstandard L1 dict 16K"] = (cctx(1, both[16 << 10]), cctx(1, both[16 << 10]))
    out["zstandard L1 dict 64K"] = (cctx(1, both[64 << 10]), cctx(1, both[64 << 10]))
    out["zstandard L1 rests' dict 16K"] = (cctx(1, rest_only), cctx(1))
    out["zstandard L3 dict 64K"] = (cctx(3, both[64 << 10]), cctx(3, both[64 << 10]))
    return out


def main(root: Path, rounds: int = 3, save: Path | None = None) -> None:
    if not root.exists():
        archive.generate(root, 10_000)
    params = RouteParams(
        axes=DEFAULT_AXES, zone=ZoneInfo("Asia/Shanghai"), max_bytes=4 << 20, message_limit=24 << 20
    )
    chunks = _chunks(root, params)
    held = chunks[TRAIN // CHUNK :]  # the notes the dictionaries were not trained on
    v4 = sum(len(v) for c in held for _, v in c)
    notes = sum(1 for c in held for _ in c)
    print(f"{notes} notes packed, v4 {v4 / notes:.0f} B a note")
    variants = _variants(chunks, params, save)
    for r in range(rounds):
        for name in list(variants) if r % 2 == 0 else list(reversed(variants)):
            secs, rest, body = _packed(held, params, *variants[name])
            print(
                f"round {r + 1} {name:30} {secs / notes * 1e6:6.1f} µs a note  {(rest + body) / v4:.4f}x v4"
                f"  rests {rest / notes:5.0f} B, bodies {body / notes:5.0f} B a note"
            )


if __name__ == "__main__":
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    main(Path(sys.argv[1]), rounds, Path(sys.argv[3]) if len(sys.argv) > 3 else None)
