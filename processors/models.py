"""Data exchanged between the pipeline stages, and the briefing schema v1."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from processors.reasons import NoIncrementCode, RejectionCode, RelevanceCode, WarningCode

Kind = Literal["inbox", "paper_card", "work_queue", "baseline", "living"]
SourceStatus = Literal["used", "no_increment", "duplicate", "superseded"]
Trigger = Literal["close", "flush"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_F = TypeVar("_F", bound=Frozen)
_EVERY_FIELD: dict[type[Frozen], set[str]] = {}
_new = object.__new__
_set = object.__setattr__


def built(cls: type[_F], values: dict[str, Any]) -> _F:
    """What `cls.model_construct(**values)` makes when `values` holds every field, of its own types: without
    pydantic's walk over the fields (each source of a 100k window makes three), and with one fields set shared
    by every instance of the class (frozen: never changed). `tests/processors/test_models.py` holds the two equal.
    """
    fields = _EVERY_FIELD.get(cls)
    if fields is None:
        fields = _EVERY_FIELD[cls] = set(cls.model_fields)
    # object's own functions, bound once (_new, _set): a parse process builds ~15 models a note, and looking them
    # up through the class and `object` was a third of each build.
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


class AxisSpec(Frozen):
    """One topic axis: its name, keywords and living document (root-relative path)."""

    name: str
    keywords: tuple[str, ...] = ()
    living_doc: str | None = None


class RawFile(Frozen):
    """What the watcher publishes to `predigest.raw`: one file's bytes and stat."""

    path: str  # root-relative, POSIX separators
    content: bytes  # JSON-encoded as base64 by pydantic (ser_json_bytes)
    size: int
    mtime: float  # seconds since the epoch
    sha256: str
    deleted: bool = False
    # Why the watcher refused the file (a symlink, outside the root …); it then travels without its bytes.
    refused: str | None = None
    refused_code: RejectionCode | None = None  # why, as a code (None from a watcher before codes: "parse")

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


class Section(Frozen):
    """A heading of a document and the text under it."""

    number: str | None  # "§3.3" or "§2.4" if the heading carries one, else None
    heading: str
    level: int
    text: str


class TitledId(Frozen):
    """A title a document gives an id; strong when the writer states it as a title (card, link, row, heading)."""

    id: str
    title: str
    source: str  # path#section
    strong: bool
    rank: int = 0  # trust of its source, processors.id_titles.TRUST: a higher rank wins


class DocumentSummary(Frozen):
    """What a briefing needs of every document of the window: all of a Document but its text.

    A window can hold 100k notes; they are ranked from summaries, and only the few hundred that can
    feed increments are loaded whole.
    """

    # Only the keys of its JSON go into pydantic's string cache: with its values too (the default), the last
    # 16 384 short strings of a window's 100k summaries outlived the briefing, one in each of the ~100 MiB of
    # Python's memory pools that then could not be freed (docs/performance.md).
    model_config = ConfigDict(frozen=True, extra="forbid", cache_strings="keys")

    path: str
    sha256: str
    writer: str | None
    kind: Kind
    event_time: datetime  # timezone-aware
    bytes: int
    title: str
    axes: tuple[str, ...] = ()  # from front matter, if any
    tags: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()
    arxiv_ids: tuple[str, ...] = ()  # normalised, without version, in order of first appearance
    text_hash: str  # sha256 of the normalised text (exact-duplicate key)
    signature: tuple[int, ...] = ()  # MinHash of the text's shingles (processors.near_duplicates); () if tiny
    front_matter: dict[str, object] = Field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    warning_codes: tuple[WarningCode, ...] = ()  # one per warning, same order
    baseline_axis: str | None = None  # for kind "baseline": the axis the briefing belongs to
    version: str | None = None  # living documents: "v3.44"
    terms: dict[str, int] = Field(default_factory=dict)  # top index terms and keyword terms (title thrice)
    length: int = 0  # tokens in title and text: BM25 normalises term counts by it
    # The titles it states for arXiv ids (processors.id_titles); None: not worked out (a record written before
    # notes kept them, converted where it is decoded: processors.wire).
    titled: tuple[TitledId, ...] | None = None


class Document(DocumentSummary):
    """A parsed file, before axis assignment: its summary plus its text and sections."""

    sections: tuple[Section, ...] = ()
    text: str

    def summary(self) -> DocumentSummary:
        """The same document without its text."""
        return DocumentSummary.model_construct(**{k: getattr(self, k) for k in DocumentSummary.model_fields})


class Rejection(Frozen):
    path: str
    reason: str  # the operator's message (English), as logged
    reason_code: RejectionCode | None = None  # None: recorded before codes, or by a state that drops them


class ControlCommand(Frozen):
    """A close or flush order on `predigest.control` (key: axis)."""

    axis: str
    trigger: Trigger
    end: datetime
    requested_at: datetime
    request_id: str


# ---- briefing v1 -------------------------------------------------------------


class WindowBounds(Frozen):
    start: datetime
    end: datetime


class LivingDocRef(Frozen):
    path: str | None
    version: str | None
    sections: dict[str, str] = Field(default_factory=dict)  # § label → section title, for readers


class Summary(Frozen):
    increment_count: int
    target_range: tuple[int, int]
    new_arxiv: list[str]
    continued_arxiv: list[str]


# Display labels of briefings written before relevance codes existed (always zh): read back as codes.
_LEGACY_RELEVANCE: dict[str, RelevanceCode] = {
    "极高": "very_high", "高": "high", "中": "medium", "低": "low",
    "基线": "baseline", "参考": "reference", "邻接": "adjacent",
}  # fmt: skip


class Relevance(Frozen):
    """`code` is what code compares; `label` its display text in the briefing's language."""

    label: str
    code: RelevanceCode
    stars: int
    score: float
    # The axis profile's terms (keywords, the living document's vocabulary) the source uses, most frequent first:
    # the evidence behind `score`, for `predigest explain`. Empty in briefings written before it was recorded.
    terms: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _code_of_legacy_label(cls, data: object) -> object:
        if isinstance(data, dict) and "code" not in data and "label" in data:
            return {**data, "code": _LEGACY_RELEVANCE.get(str(data["label"]), "medium")}
        return data


class SourceEntry(Frozen):
    path: str
    writer: str | None
    kind: Kind
    event_time: datetime
    bytes: int
    title: str
    relevance: Relevance
    status: SourceStatus
    duplicate_of: str | None = None
    duplicate_kind: Literal["exact", "near"] | None = None
    similarity: float | None = None  # estimated Jaccard with `duplicate_of`
    # Tuples: the ~100k entries of a window without a warning share one empty tuple (not two empty lists each).
    warnings: tuple[str, ...] = ()
    warning_codes: tuple[WarningCode, ...] = ()
    topic: str = ""  # one line built from the source's headings


class SectionRelation(Frozen):
    """A living-document section that already covers an increment, and what it anchors there."""

    section: str
    title: str
    anchored: list[str] = Field(default_factory=list)
    via: Literal["arxiv_id", "text"]


class SectionSuggestion(Frozen):
    """A section an increment should go into, and the point that goes there."""

    section: str
    title: str
    reason: str
    via: Literal["anchor", "arxiv_id", "text"]


# Why an increment has no suggested section: no section of the living document fits it, there is none, or it
# is stored but does not read back (damaged, or a row of it missing: its rejected entry's code tells them apart).
# `living_document_row_missing` is read, never written: an earlier release refuses it (processors.damaged_notes).
UnplacedReason = Literal[
    "no_section_fits", "no_living_document", "living_document_damaged", "living_document_row_missing"
]


class Increment(Frozen):
    rank: int
    title: str
    stars: int
    arxiv: list[str]
    sources: list[str]
    urls: list[str]
    points: list[str]
    thesis: str
    credibility: str
    novelty: Literal["new", "continued"]
    related_sections: list[str]
    suggested_sections: list[str]
    highlights: list[str] = Field(default_factory=list)  # `吞吐量提升 3.8×`: the figures for the summary
    relations: list[SectionRelation] = Field(default_factory=list)
    suggestions: list[SectionSuggestion] = Field(default_factory=list)
    score: float = 0.0
    unplaced_reason: UnplacedReason | None = None  # why `suggested_sections` is empty

    def named(self) -> str:
        """The title when there is one beyond the id ('' when the id stands alone)."""
        return "" if self.title in self.arxiv else self.title


class Claim(Frozen):
    text: str
    source: str


DiscrepancyKind = Literal[
    "version_conflict", "arxiv_id_conflict", "future_arxiv_id", "unsourced_claim", "flagged"
]


class Discrepancy(Frozen):
    id: str
    kind: DiscrepancyKind
    subject: str
    claims: list[Claim]
    suggestion: str
    # What the discrepancy is about, independent of language and wording (`version:vllm:0.3.3|0.30.0`):
    # the same key keeps its D number in every later briefing. Optional, so v1 readers and records stay valid.
    key: str | None = None


class ArxivMetadata(Frozen):
    source: Literal["arxiv_api", "cache", "document"]
    published: str | None = None
    primary_category: str | None = None


class ArxivEntry(Frozen):
    id: str
    title: str
    status: Literal["new", "continued"]
    credibility: str
    sections: list[str]
    metadata: ArxivMetadata


class NoIncrementSource(Frozen):
    path: str
    reason: str  # display text in the briefing's language
    code: NoIncrementCode


PriorityLevel = Literal["highest", "medium", "low"]


class Priority(Frozen):
    level: PriorityLevel
    content: str
    action: str


class Briefing(Frozen):
    """The machine-readable briefing, `predigest.briefing/v1`."""

    schema_: Literal["predigest.briefing/v1"] = Field("predigest.briefing/v1", alias="schema")
    axis: str
    trigger: Trigger
    generated_at: datetime
    window: WindowBounds
    living_doc: LivingDocRef
    summary: Summary
    sources: list[SourceEntry]
    increments: list[Increment]
    discrepancies: list[Discrepancy]
    arxiv: list[ArxivEntry]
    no_increment_sources: list[NoIncrementSource]
    priorities: list[Priority]
    rejected: list[Rejection]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
