"""The vendored corpus stays byte-for-byte as published: its MANIFEST's hashes are checked."""

import hashlib
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"


def test_every_vendored_file_matches_its_manifest_hash() -> None:
    rows = [line.split("\t") for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:] if line]
    assert rows
    for local_path, *_, sha256_16, _note in rows:
        data = (CORPUS / local_path).read_bytes()
        assert hashlib.sha256(data).hexdigest()[:16] == sha256_16, f"{local_path} was modified"
