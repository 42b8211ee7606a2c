"""predigest's compiled pass over a note (issue 14): structure, arXiv ids, hash, terms and MinHash in one call."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

class NoteReading:
    """One note read: its ids, hash and signature, sections, title offers and token counts; its structure
    built on first use."""

    @property
    def structure(self) -> Any: ...  # processors.structure.Structure
    @property
    def sections(self) -> list[tuple[str | None, str, int, str]]: ...  # (number, heading, level, text)
    @property
    def title_scan(
        self,
    ) -> list[tuple[int, int, str | None, str, list[tuple[str, str, str]], tuple[str, str, bool] | None]]: ...
    @property
    def arxiv_ids(self) -> list[str]: ...
    @property
    def invalid_ids(self) -> list[str]: ...
    @property
    def text_hash(self) -> str: ...
    @property
    def signature(self) -> tuple[int, ...]: ...
    def terms(self, title: str, keep: Iterable[str]) -> tuple[dict[str, int], int]: ...
    def stored_body(self) -> bytes | None: ...  # wire._store's body, from the pass's UTF-8 and offsets

class Reader:
    """Reads notes with the product's constants, building its Block, SectionNode and Structure types."""

    def __init__(
        self,
        *,
        block: type,
        section: type,
        structure: type,
        stopwords: Iterable[str],
        num_perm: int,
        seed: int,
        min_shingles: int,
        index_terms: int,
    ) -> None: ...
    def structure(self, body: str) -> Any: ...
    def read(self, body: str, utf8: bytes | None = None) -> NoteReading: ...
    def term_parts(self, text: str) -> tuple[dict[str, int], dict[str, int], str | None]: ...

class PlainFrontMatter:
    """Reads flat `key: value` front matter; plain scalars resolved by `resolve` (PyYAML's rules)."""

    def __init__(self, *, resolve: Callable[[str], object], starts: str, every: bool) -> None: ...
    def read(self, block: str) -> dict[object, object] | None: ...

def extract_arxiv_ids(text: str) -> list[str]: ...

class JsonIndenter:
    """Compact JSON (as pydantic writes it) indented as `to_json(indent=n)` writes it, a piece at a time."""

    def __init__(self, indent: int = 2) -> None: ...
    def feed(self, piece: bytes) -> bytes: ...
    def finish(self) -> bytes: ...

class ArrowBatch:
    """Rows of named columns as one Arrow batch (`__arrow_c_stream__`) for `DuckDBPyConnection.from_arrow`: the
    base of `TextColumns`, `TypedColumns` and `FactRows`."""

    def __len__(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

class TextColumns(ArrowBatch):
    """Columns of strings as one Arrow batch (`__arrow_c_stream__`) for `DuckDBPyConnection.from_arrow`, their
    UTF-8 encoded without the GIL; a `bytes` cell is taken as its UTF-8, checked. ValueError: columns of different
    lengths, a lone surrogate, or bytes that are not UTF-8."""

    def __init__(self, names: list[str], columns: Sequence[Sequence[str | bytes]]) -> None: ...

class TypedColumns(ArrowBatch):
    """Columns of the types named as one Arrow batch (`__arrow_c_stream__`) for `DuckDBPyConnection.from_arrow`:
    "text" (str or UTF-8 bytes, encoded without the GIL), "int64", "int64?" (None: NULL), "int32", "bool",
    "timestamp" (microseconds since the epoch, UTC), "text[]" (each cell a sequence of str)."""

    def __init__(self, names: list[str], types: list[str], columns: Sequence[Sequence[object]]) -> None: ...

class ProfileScores:
    """The axes' names, their profiles (`AxisSpace._profile_index`: term → (axis number, living weight or None for
    a keyword)), each axis's living share, the window's mean length and (K1, B, keyword softness)."""

    def __init__(
        self,
        names: Sequence[str],
        index: Sequence[tuple[str, Sequence[tuple[int, float | None]]]],
        shares: Sequence[float],
        average_length: float,
        constants: tuple[float, float, float],
    ) -> None: ...
    def scores(
        self, counts: Mapping[str, int], length: int, keyword_counts: Mapping[str, int] | None = None
    ) -> dict[str, float]: ...
    def evidence(self, counts: Mapping[str, int], axis: int, limit: int) -> tuple[str, ...]: ...

class FactRows(ArrowBatch):
    """Stored versions' term counts or signatures (JSON of their own) read into rows without the GIL, as one Arrow
    batch (`__arrow_c_stream__`) for `DuckDBPyConnection.from_arrow`."""

    @staticmethod
    def terms(vids: Sequence[int], counts: Sequence[str | bytes]) -> FactRows:
        """(vid, term, n, k) rows of `{"term": n, ...}` or `null` each, k the term's place among the version's;
        ValueError for JSON of another shape."""
    @staticmethod
    def signatures(vids: Sequence[int], signatures: Sequence[str | bytes], length: int) -> FactRows:
        """(vid, signature) of each list of `length` u64; the others (`null`, another length) left out."""

def fact_json_reads(terms_json: str | bytes, signature_json: str | bytes) -> bool:
    """Whether `FactRows` reads them: `{"term": n, ...}` (n an INTEGER) or `null`; a list of u64 or `null`."""

def summary_rest(summary: str | bytes, whole: int) -> bytes | None:
    """A summary's headings, front matter and (unless a list of `whole` ints) signature, as a JSON object of their
    bytes; None for a summary that is not a compact JSON object."""

def is_utf8(data: bytes) -> bool:
    """Whether `data` is UTF-8, as `bytes.decode` would accept it (checked without the GIL)."""

def json_string(text: str) -> bytes:
    """`text` as JSON, the bytes of `pydantic_core.to_json(text)`; UnicodeEncodeError for a lone surrogate."""

def markdown_plain(text: str) -> bool:
    """Whether `processors.inert.markdown_inline` leaves `text` as it is: no double space, no escaped character."""

def json_ints(values: object) -> bytes | None:
    """`pydantic_core.to_json(values)` of a list or tuple of ints within 64 bits; None for anything else."""

def json_counts(counts: object) -> bytes | None:
    """`pydantic_core.to_json(counts)` of a dict of str to ints within 64 bits; None for anything else."""

def raw_content(value: bytes) -> tuple[bytes, bytes] | None:
    """A raw record as the watcher writes it: (the record with `"content":""`, its content decoded); else None."""

def record_batches_intact(data: bytes) -> bool:
    """Every whole Kafka record batch in `data` is v2 and its CRC-32C matches (a cut-off last one left aside);
    False too for a negative length (int32), which aiokafka judges itself."""

def raw_file_json(path: str, content: bytes, size: int, mtime: bytes, sha256: str) -> bytes | None:
    """`RawFile(...).model_dump_json().encode()` of a file read whole, `mtime` given as its JSON
    (`pydantic_core.to_json`); None when a name is not UTF-8."""

def near_candidates(rows: object, bands: int, rows_per_band: int, needed: int) -> list[tuple[int, int]]:
    """LSH candidates of (pos BIGINT, signature UBIGINT[]) rows (`__arrow_c_stream__`, a DuckDB relation): each
    position with the lowest of each band bucket it shares, when lower, distinct; only pairs whose 2-bit sketches
    can reach `needed` equal slots. ValueError for another schema, a NULL, or signatures of different lengths."""

def near_same(rows: object, pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(x, y, equal slots) of each pair of positions, their signatures read from (pos, signature) rows as
    `near_candidates` reads them; ValueError when one is missing."""

def zstd_frame(data: bytes | memoryview, level: int) -> bytes:
    """`data` as one zstd frame at `level`, its content size declared, made with a context the thread keeps."""

def zstd_unpack_into(frames: bytes | memoryview, out: bytearray) -> int:
    """`frames` (zstd frames back to back) unpacked into `out` with a context the thread keeps: how many bytes;
    ValueError when they do not unpack or come to more than `out` holds."""
