"""Turn one raw file into a Document: decoding, front matter, kind, time, sections, ids."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import lru_cache
from zoneinfo import ZoneInfo

from processors.arxiv_ids import MAX_LISTED_IDS_PER_NOTE, arxiv_id_from_card_name, extract_arxiv_ids
from processors.errors import ParseError
from processors.front_matter import split_front_matter
from processors.id_titles import stated_pairs
from processors.models import Document, Kind, RawFile, Section, built
from processors.reasons import WarningCode
from processors.structure import NoteReading, read_note

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
_STAMP_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-T](\d{2})(\d{2}))?(?![0-9])")
_BASELINE_RE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}(?:[-T]\d{4})?-)?(?P<axis>.+?)-e1prep$")
_VERSION_RE = re.compile(r"(?<![0-9A-Za-z])v\d+(?:\.\d+)*(?![0-9A-Za-z])")
# UTF-32 before UTF-16: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_WIDE = frozenset(bom[:1] for bom, _ in _BOMS)  # the first bytes a UTF-16/32 mark can start with
# A note full of broken ids gets a few warnings, not thousands.
_MAX_ID_WARNINGS = 5

Warnings = list[tuple[WarningCode, str]]  # (code, the message the operator reads)


def _kind_of(path: str) -> tuple[Kind, str | None]:
    parts = path.split("/")
    top = parts[0] if parts else ""
    if top == "inbox" and len(parts) >= 3 and parts[1]:
        return "inbox", parts[1]
    if len(parts) >= 2 and parts[-1]:
        if top == "paper_cards":
            return "paper_card", None
        if top == "work-queue":
            return "work_queue", None
        if top == "living":
            return "living", None
    raise ParseError(f"{path}: not under inbox/<writer>/, paper_cards/, work-queue/ or living/; ignored")


def _decode(path: str, content: bytes, warnings: Warnings) -> tuple[str, int | None]:
    """The text of a note: UTF-8 (with or without BOM), UTF-16/32 by their BOM, else GB18030, else UTF-8 with
    replacements; ParseError for a binary file (NUL bytes, which UTF-16/32 text is full of). With it, where in
    `content` the UTF-8 it was read from starts (after a BOM), or None when it was read any other way."""
    wide = (
        next((codec for bom, codec in _BOMS if content.startswith(bom)), None)
        if content[:1] in _WIDE
        else None
    )
    if wide is not None:
        try:
            text = content.decode(wide)  # the codec reads the BOM for the byte order and drops it
        except UnicodeDecodeError:
            warnings.append(
                ("decode", f"file is not valid {wide.upper()} after its byte-order mark; bytes replaced")
            )
            text = content.decode(wide, errors="replace")
        if "\x00" in text:
            raise ParseError(
                f"{path}: file contains NUL bytes even as {wide.upper()}; binary files are not notes",
                "binary",
            )
        return text, None
    if b"\x00" in content:
        raise ParseError(f"{path}: file contains NUL bytes; binary files are not notes", "binary")
    # utf-8-sig, without that codec's Python-level wrapper: its BOM dropped, then UTF-8 decoded in C.
    start = len(codecs.BOM_UTF8) if content.startswith(codecs.BOM_UTF8) else 0
    try:
        return content[start:].decode(), start
    except UnicodeDecodeError:
        pass
    try:
        text = content.decode("gb18030")
        warnings.append(("decode", "file is not valid UTF-8; decoded as GB18030"))
        return text, None
    except UnicodeDecodeError:
        warnings.append(("decode", "file is not valid UTF-8; undecodable bytes replaced"))
        return content.decode("utf-8", errors="replace"), None


def is_blank(content: bytes) -> bool:
    """Nothing but white space (and a byte-order mark), in whichever encoding the note is read."""
    try:
        return not _decode("", content, [])[0].strip()
    except ParseError:
        return False


def _as_strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    return tuple(s for s in (str(v).strip() for v in items) if s)


def _to_zone(value: datetime, zone: ZoneInfo) -> datetime:
    return value.replace(tzinfo=zone) if value.tzinfo is None else value.astimezone(zone)


def _front_matter_time(value: object, zone: ZoneInfo, warnings: Warnings) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return _to_zone(value, zone)
    if isinstance(value, date):
        return datetime.combine(value, time(0, 0), tzinfo=zone)
    if isinstance(value, str):
        try:
            return _to_zone(datetime.fromisoformat(value.strip()), zone)
        except ValueError:
            pass
    warnings.append(("front_matter", f"front matter date {str(value)[:40]!r} is not ISO 8601; ignored"))
    return None


def _stamp_time(stem: str, zone: ZoneInfo) -> datetime | None:
    m = _STAMP_RE.match(stem)
    if not m:
        return None
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hh, mm = (int(m.group(4)), int(m.group(5))) if m.group(4) else (0, 0)
    try:
        return datetime(y, mo, d, hh, mm, tzinfo=zone)
    except ValueError:
        return None


def file_time(path: str, mtime: float, zone: ZoneInfo) -> datetime | None:
    """A file's time when its front matter is not read: the name's stamp in `zone`, else its mtime; None if neither."""
    name = path.rsplit("/", 1)[-1]
    stamped = _stamp_time(name.rsplit(".", 1)[0] if "." in name else name, zone)
    if stamped is not None:
        return stamped
    try:
        return datetime.fromtimestamp(mtime, tz=UTC).astimezone(zone)
    except (OverflowError, ValueError, OSError):
        return None


def _body_utf8(content: bytes, start: int | None, text: str, body: str) -> bytes | None:
    """The body's bytes in the file when the file was read as UTF-8 from `start` (the compiled pass then
    does not encode the body again): found past the text before the body, re-encoded (its front matter)."""
    if start is None or not text.endswith(body):
        return None
    return content[start + len(text[: len(text) - len(body)].encode()) :]


def _sections(reading: NoteReading) -> list[Section]:
    """The sections of a body, split on its headings by the Markdown parser (processors.structure)."""
    # Built, not validated: the compiled pass gives (str | None, str, int, str) by its signature, and each
    # text is a slice of the body, which Document validates as its `text`.
    return [
        built(Section, {"number": n, "heading": h, "level": level, "text": t})
        for n, h, level, t in reading.sections
    ]


def parse_document(
    raw: RawFile,
    *,
    zone: ZoneInfo,
    max_bytes: int = DEFAULT_MAX_BYTES,
    keep_terms: frozenset[str] = frozenset(),
) -> Document:
    """Parse a raw file; raises ParseError (and nothing else) when it cannot become a document.

    `keep_terms` (the configured axes' keyword terms) are counted whether or not they are among the
    note's most frequent terms, so relevance sees every keyword a long note mentions.
    """
    return parse_read(raw, zone=zone, max_bytes=max_bytes, keep_terms=keep_terms)[0]


def parse_read(
    raw: RawFile, *, zone: ZoneInfo, max_bytes: int, keep_terms: frozenset[str]
) -> tuple[Document, bytes | None]:
    """`parse_document`, and its body as `wire.store_document` writes it, made from the UTF-8 and the section offsets
    the compiled pass holds (~20 µs a note in Python); None when the pass read it otherwise (lone surrogates)."""
    try:
        return _parse(raw, zone, max_bytes, keep_terms)
    except ParseError:
        raise
    except Exception as exc:  # the fuzz contract: any bytes give a Document or a ParseError
        raise ParseError(f"{raw.path}: could not be parsed ({type(exc).__name__}: {exc})") from exc


@dataclass(frozen=True)
class _Head:
    """What a note's path and front matter say of it before its body is read."""

    kind: Kind
    writer: str | None
    name: str  # the file name
    stem: str  # the file name without its extension
    baseline_axis: str | None  # for a baseline (`…-<axis>-e1prep.md`): its axis
    front: dict[str, object]


def _admit(raw: RawFile, max_bytes: int) -> None:
    """ParseError for a file the watcher refused or one over the size limit."""
    if raw.refused:
        raise ParseError(f"{raw.path}: {raw.refused}", raw.refused_code or "parse")
    size = max(raw.size, len(raw.content))
    if size > max_bytes:
        raise ParseError(
            f"{raw.path}: file is {size} bytes, over the limit of {max_bytes}; "
            "split it or raise PREDIGEST_MAX_BYTES",
            "limit",
        )


def _head(path: str, kind: Kind, writer: str | None, front: dict[str, object]) -> _Head:
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    baseline_axis = None
    if kind == "inbox" and "-e1prep" in stem:  # only such a stem matches; the lazy scan was ~2.7 µs a note
        bm = _BASELINE_RE.match(stem)
        if bm:
            kind, baseline_axis = "baseline", bm.group("axis")
    if writer is None and isinstance(front.get("writer"), str):
        writer = str(front["writer"])
    return _Head(kind, writer, name, stem, baseline_axis, front)


def _event_time(raw: RawFile, head: _Head, raw_date: object, zone: ZoneInfo, warnings: Warnings) -> datetime:
    """The front matter's date, else the name's stamp, else the file's mtime (with a warning for a note)."""
    event_time = _front_matter_time(raw_date, zone, warnings) or _stamp_time(head.stem, zone)
    if event_time is not None:
        return event_time
    try:
        event_time = datetime.fromtimestamp(raw.mtime, tz=UTC).astimezone(zone)
    except (OverflowError, ValueError, OSError):
        raise ParseError(
            f"{raw.path}: no date stamp in its name or front matter, and its mtime {raw.mtime!r} is no "
            "time; stamp the file name (YYYY-MM-DD-HHMM-…) or fix its mtime"
        ) from None
    if head.kind in ("inbox", "baseline", "work_queue"):
        warnings.append(("no_stamp", "file name has no date stamp; event time taken from the file's mtime"))
    return event_time


def _title(head: _Head, headings: tuple[str, ...]) -> str:
    """The front matter's title, else the first heading, else the file name's stem."""
    title_fm = head.front.get("title")
    title = str(title_fm).strip() if title_fm not in (None, "") else (headings[0] if headings else head.stem)
    return title or head.stem


def _version(head: _Head, headings: tuple[str, ...]) -> str | None:
    """A living document's version (`v3.44`): from its first heading, else from its front matter."""
    if head.kind != "living":
        return None
    vm = _VERSION_RE.search(headings[0]) if headings else None
    if vm:
        return vm.group(0)
    if head.front.get("version") in (None, ""):
        return None
    version = str(head.front["version"]).strip()
    return f"v{version}" if version[:1].isdigit() else version


def _arxiv_ids(head: _Head, reading: NoteReading, warnings: Warnings) -> tuple[str, ...]:
    """A card's id (from its file name) first, then the front matter's, then the body's; unique, in order."""
    ids: list[str] = []
    if head.kind == "paper_card":
        card_id = arxiv_id_from_card_name(head.name)
        if card_id:
            ids.append(card_id)
        else:
            warnings.append(
                ("arxiv_id", "paper card file name carries no valid arXiv id (<card>-<yymm>-<nnnnn>.md)")
            )
    if head.front.get("arxiv") is not None:
        ids.extend(extract_arxiv_ids(" ".join(_as_strings(head.front["arxiv"]))))
    ids.extend(reading.arxiv_ids)
    unique = tuple(dict.fromkeys(ids))
    if len(unique) > MAX_LISTED_IDS_PER_NOTE and head.kind not in (
        "baseline",
        "living",
    ):  # ours, or read whole
        warnings.append(
            (
                "many_ids",
                f"cites {len(unique)} arXiv ids; a briefing lists the first {MAX_LISTED_IDS_PER_NOTE}",
            )
        )
    for bad in reading.invalid_ids[:_MAX_ID_WARNINGS]:
        warnings.append(("arxiv_id", f"{bad!r} is written as an arXiv id but is not a valid one; not cited"))
    return unique


@lru_cache(maxsize=8)
def _in_order(keep_terms: frozenset[str]) -> tuple[str, ...]:
    """The keep terms sorted: a set's order follows the process's hash seed, and the terms a note keeps of them
    follow the top terms in this order, so a documents record's bytes would differ between processes."""
    return tuple(sorted(keep_terms))


def _parse(
    raw: RawFile, zone: ZoneInfo, max_bytes: int, keep_terms: frozenset[str]
) -> tuple[Document, bytes | None]:
    _admit(raw, max_bytes)
    kind, writer = _kind_of(raw.path)  # a path outside the known folders is refused before its bytes are read
    warnings: Warnings = []
    text, utf8_start = _decode(raw.path, raw.content, warnings)
    fm = split_front_matter(text, warnings)
    head = _head(raw.path, kind, writer, fm.fields)
    event_time = _event_time(raw, head, fm.date, zone, warnings)
    # One compiled pass over the body: structure, ids, hash, signature and token counts (issue 14).
    reading = read_note(fm.body, _body_utf8(raw.content, utf8_start, text, fm.body))
    sections = _sections(reading)
    headings = tuple(s.heading for s in sections if s.level > 0)
    title = _title(head, headings)
    ids = _arxiv_ids(head, reading, warnings)
    terms, length = reading.terms(title, _in_order(keep_terms))
    # Built, not validated: every value is of its field's type as made here (the raw file's, validated when read;
    # the compiled pass's by its signature; str() of front matter values, json_safe's mapping of str keys; the
    # codes and kinds literals), which validating only copied (~7 µs a note). The fuzz tests hold every document
    # parsed equal, value and type, to the one validating its values makes.
    doc = built(
        Document,
        {
            "path": raw.path,
            "sha256": raw.sha256,
            "writer": head.writer,
            "kind": head.kind,
            "event_time": event_time,
            "bytes": raw.size,
            "title": title,
            "axes": _as_strings(head.front.get("axes")),
            "tags": _as_strings(head.front.get("tags")),
            "headings": headings,
            "arxiv_ids": ids,
            "text_hash": reading.text_hash,
            "signature": reading.signature,
            "front_matter": head.front,
            "warnings": tuple(message for _, message in warnings),
            "warning_codes": tuple(code for code, _ in warnings),
            "baseline_axis": head.baseline_axis,
            "version": _version(head, headings),
            "terms": terms,
            "length": length,
            # The titles a note gives its ids, kept with its summary: id conflicts are checked across whole windows.
            "titled": tuple(stated_pairs(raw.path, head.kind, title, ids, reading)),
            "sections": tuple(sections),
            "text": fm.body,
        },
    )
    return doc, reading.stored_body()
