"""The bench's 10k root routed once as the worker routes it, saved as the window agent's batches of documents records.

Raw batches of 500 notes (the raw agent's `batch_records`), each routed in chunks of 63 (`route_values`, then
`packed`, as a parse process does) and joined per partition (`documents_records`); the records then cut into window
batches of at most `--batch` notes (`batch_weight`), each record at its partition's next offset.

    python -m bench.store45.build --base /tmp/store45 --notes 10000 --batch 400
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
from datetime import UTC, datetime
from pathlib import Path

from bench import archive
from processors.parse_stage import Routed, documents_records, packed, route_values
from processors.raw_record import raw_record_of
from processors.wire_packed import batch_weight
from streams.ownership import key_partition
from streams.pipeline import route_params
from streams.settings import Settings

RAW_BATCH = 500
CHUNK = 63
SEEN_AT = datetime(2026, 9, 27, 14, 0, tzinfo=UTC)
Batch = list[tuple[int, int, bytes]]  # (partition, offset, value)


def root_of(base: Path, n: int) -> tuple[Path, list[str]]:
    """The generated root of n notes (made once), and its files in the order they were written."""
    root = base / f"root-{n}"
    listing = base / f"root-{n}.paths"
    if not listing.exists():
        stats = archive.generate(root, n)
        listing.write_text("\n".join(stats.paths))
    return root, listing.read_text().splitlines()


def raw_value(root: Path, rel: str) -> bytes:
    data = (root / rel).read_bytes()
    mtime = (root / rel).stat().st_mtime
    return raw_record_of(rel, data, len(data), mtime, hashlib.sha256(data).hexdigest())


def batches(root: Path, paths: list[str], cap: int) -> list[Batch]:
    settings = Settings(root=root)
    params = route_params(settings)
    offsets: dict[int, int] = {}
    out: list[Batch] = [[]]
    weight = 0
    for start in range(0, len(paths), RAW_BATCH):
        values = [(raw_value(root, rel), start + i) for i, rel in enumerate(paths[start : start + RAW_BATCH])]
        routed: list[Routed] = []
        for c in range(0, len(values), CHUNK):
            routed += packed(route_values(values[c : c + CHUNK], params, SEEN_AT), params)
        for key, value in documents_records(routed, params):
            partition = key_partition(key.decode(), settings.kafka.partitions)
            offset = offsets.get(partition, 0)
            offsets[partition] = offset + 1
            w = batch_weight(value)
            if weight and weight + w > cap:
                out.append([])
                weight = 0
            out[-1].append((partition, offset, value))
            weight += w
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, default=Path("/tmp/store45"))
    p.add_argument("--notes", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=400)
    a = p.parse_args()
    a.base.mkdir(parents=True, exist_ok=True)
    root, paths = root_of(a.base, a.notes)
    got = batches(root, paths, a.batch)
    out = a.base / f"batches-{a.notes}-{a.batch}.pickle"
    out.write_bytes(pickle.dumps(got))
    records = sum(len(b) for b in got)
    print(f"{out}: {len(got)} batches, {records} records, {sum(len(v) for b in got for _, _, v in b)} bytes")


if __name__ == "__main__":
    main()
