"""What a briefing reads of a stored version besides its text, worked out once, when the version is stored.

The state keeps each version's summary (processors.wire). A briefing of a large window must not read and
validate every summary whole: its signature (128 numbers) and term counts are most of it, and what it needs of
them are window figures (duplicate groups, term statistics, counts of the profile terms) that DuckDB computes
from columns and rows. So a stored version also becomes these facts (`sinks.source_rows` writes them, and has
DuckDB read the term counts and the signature out of the summary into rows and columns of their own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
import pydantic_core
from predigest_native import fact_json_reads, json_counts, json_ints
from pydantic import Field, StrictBool, StrictInt, StrictStr, TypeAdapter

from processors.id_conflicts import title_mark, within_bound
from processors.models import DocumentSummary, TitledId

# Kept as rows and columns instead, or (the headings) as the topic line they make.
_BULK = ("signature", "terms", "headings", "titled")
# The front-matter fields a briefing reads of every source (processors.relevance.declared_axes,
# processors.sources.topic_line, processors.units.card_anchors); a source read whole keeps them all.
ROW_FRONT_MATTER = ("primary", "anchors", "card")
_NUMBERING = re.compile(r"^\s*(?:§\s*)?\d+(?:\.\d+)*[.、)]?\s+")
TOPIC_LIMIT = 90


@dataclass(frozen=True, slots=True)
class StatedTitle:
    """One (id, title) pair a version states, as a row: what a briefing ranks the window's titles by in SQL."""

    n: int  # its place among the version's pairs
    pair: TitledId
    mark: tuple[str, str]  # the id without its version, the title casefolded (processors.id_conflicts)
    bounded: bool  # among the first pairs of its path that id conflicts look at


@dataclass(frozen=True)
class SourceFacts:
    """One version's facts: its summary without its bulk, the line its headings make, what relevance needs, and
    the titles it states for its ids."""

    summary_json: (
        str  # the summary without `signature`, `terms`, `headings`, `titled`, most of its front matter
    )
    topic: str  # the line its headings make (`heading_topic`): what 一 and 五 say it is about
    text_hash: str
    length: int  # its BM25 length: its tokens, else (an older record) its term counts' sum
    counted: bool  # it has term counts
    arxiv_ids: tuple[str, ...]
    titled: tuple[StatedTitle, ...] = ()
    # The summary's term counts and signature as JSON of their own: DuckDB reads them into rows and a column
    # (sinks.source_rows) at a third of the cost of reading them out of the whole summary.
    terms_json: str = "null"
    signature_json: str = "null"


def heading_topic(title: str, headings: Sequence[str], limit: int = TOPIC_LIMIT) -> str:
    """A note's topic line: its headings but the title, unnumbered, joined; the title when it has none."""
    parts = [_unnumbered(h).strip() for h in headings if h != title]
    parts = [p for p in dict.fromkeys(parts) if p]
    text = " + ".join(parts) or title
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unnumbered(heading: str) -> str:
    # Only a heading led by a space, a § or a digit can be numbered (\s and \d are str.isspace and isdecimal):
    # the others skip the pattern, most of what a note's topic line cost.
    lead = heading[:1]
    if lead.isspace() or lead == "§" or lead.isdecimal():
        return _NUMBERING.sub("", heading)
    return heading


def source_facts(summary_json: str | bytes) -> SourceFacts:
    """The facts of a stored summary (`DocumentSummary` JSON, as `processors.wire` stores it: validated)."""
    return summary_facts(pydantic_core.from_json(summary_json))  # twice as fast as json.loads here


def summary_facts(data: dict[str, Any]) -> SourceFacts:
    """`source_facts` of the summary as JSON values (not changed)."""
    terms: dict[str, int] = data.get("terms") or {}
    headings: list[str] = data.get("headings") or []
    slim = {k: v for k, v in data.items() if k not in _BULK}
    # A quarter of what validating each row's summary costs a briefing is the rest of its front matter.
    front: dict[str, Any] = data.get("front_matter") or {}
    slim["front_matter"] = {k: v for k, v in front.items() if k in ROW_FRONT_MATTER}
    return SourceFacts(
        summary_json=pydantic_core.to_json(slim).decode(),
        topic=heading_topic(data["title"], headings),
        text_hash=data["text_hash"],
        length=data.get("length") or sum(terms.values()),
        counted=bool(terms),
        arxiv_ids=tuple(data.get("arxiv_ids") or ()),
        titled=stated_rows([TitledId.model_validate(p) for p in data.get("titled") or ()]),
        terms_json=pydantic_core.to_json(data.get("terms")).decode(),
        signature_json=pydantic_core.to_json(data.get("signature")).decode(),
    )


# The summary's fields in order, in runs: a bulk field and the front matter alone (serialized on their own: the
# facts reuse the first and slim the second), the others together.
_ALONE = (*_BULK, "front_matter")


def _runs(names: Sequence[str]) -> tuple[tuple[tuple[str, ...], bytes | None], ...]:
    """The runs, each with its key's JSON when it is a field alone."""
    runs: list[list[str]] = []
    for name in names:
        if name in _ALONE or not runs or runs[-1][0] in _ALONE:
            runs.append([name])
        else:
            runs[-1].append(name)
    return tuple((tuple(run), f'"{run[0]}":'.encode() if run[0] in _ALONE else None) for run in runs)


_RUNS = _runs(list(DocumentSummary.model_fields))
_FRONT_KEY = b'"front_matter":'
# The two bulk fields pydantic spent longest on (~8 µs a note), written natively when of their usual types: the same
# bytes (tests/processors/test_native_json_string.py); anything else is left to pydantic.
_NATIVE_JSON: dict[str, Callable[[object], bytes | None]] = {"signature": json_ints, "terms": json_counts}


def _to_json(value: object) -> bytes:
    # As a model's JSON writes them: NaN and infinities (an older stored summary may hold one) as null.
    return pydantic_core.to_json(value, inf_nan_mode="null")


def document_facts(values: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """A summary's JSON (`model_dump_json`'s bytes) and `dump_facts` of its facts (`summary_facts`), from its
    fields' validated values.

    Each part is serialized once: the facts' JSON is made of the parts' bytes (its slim summary, terms and
    signature quoted as they are), not of a `SourceFacts` serialized again (~5 µs of a parse process's note)."""
    whole: list[bytes] = []
    slim: list[bytes] = []
    alone: dict[str, bytes] = {}
    for run, key in _RUNS:
        if key is None:
            part = _to_json({k: values[k] for k in run})[1:-1]
            whole.append(part)
            slim.append(part)
            continue
        value = values[run[0]]
        native = _NATIVE_JSON.get(run[0])
        alone[run[0]] = part = (native(value) if native else None) or _to_json(value)
        whole.append(key + part)
        if key == _FRONT_KEY:
            front = {k: v for k, v in values["front_matter"].items() if k in ROW_FRONT_MATTER}
            slim.append(_FRONT_KEY + _to_json(front))
    terms: dict[str, int] = values["terms"]
    middle = pydantic_core.to_json(
        [
            heading_topic(values["title"], values["headings"]),
            values["text_hash"],
            values["length"] or sum(terms.values()),
            bool(terms),
            values["arxiv_ids"],
            # Most notes state no title: their rows skip `within_bound`'s Counter (~2 µs a note).
            _titled_rows(stated_rows(list(values["titled"]))) if values["titled"] else [],
        ]
    )
    facts = [
        b'["',
        _quoted(b"{" + b",".join(slim) + b"}"),
        b'",',
        middle[1:-1],
        b',"',
        _quoted(alone["terms"]),
    ]
    return b"{" + b",".join(whole) + b"}", b"".join([*facts, b'","', _quoted(alone["signature"]), b'"]'])


def _quoted(json_text: bytes) -> bytes:
    """A compact JSON text as the inside of a JSON string, as `to_json` of its `str` writes it: only its quotes and
    backslashes need escaping (it holds no control character: `to_json` escaped those within its strings)."""
    return json_text.replace(b"\\", b"\\\\").replace(b'"', b'\\"')


def stated_rows(titled: list[TitledId]) -> tuple[StatedTitle, ...]:
    """A version's stated titles as rows (`processors.wire` gives every stored summary its titles)."""
    bounded = within_bound(titled)
    return tuple(
        StatedTitle(n, p, title_mark(p), b) for n, (p, b) in enumerate(zip(titled, bounded, strict=True))
    )


# The store's INTEGER columns (source_rows.length, source_titles.n and rank): a value beyond one failed the batch.
_Integer = Annotated[StrictInt, Field(ge=-(2**31), lt=2**31)]
_StatedRow = tuple[
    _Integer, StrictStr, StrictStr, StrictStr, StrictBool, _Integer, StrictStr, StrictStr, StrictBool
]
_FACTS_ROW: TypeAdapter[tuple[str, str, str, int, bool, list[str], list[_StatedRow], str, str]] = TypeAdapter(
    tuple[
        StrictStr,
        StrictStr,
        StrictStr,
        _Integer,
        StrictBool,
        list[StrictStr],
        list[_StatedRow],
        StrictStr,
        StrictStr,
    ]
)


def dump_facts(facts: SourceFacts) -> str:
    """The facts as compact JSON (one line), for a documents record to carry them to the window stage."""
    row = [
        facts.summary_json,
        facts.topic,
        facts.text_hash,
        facts.length,
        facts.counted,
        facts.arxiv_ids,
        _titled_rows(facts.titled),
        facts.terms_json,
        facts.signature_json,
    ]
    return pydantic_core.to_json(row).decode()


def _titled_rows(titled: Sequence[StatedTitle]) -> list[list[object]]:
    return [
        [t.n, t.pair.id, t.pair.title, t.pair.source, t.pair.strong, t.pair.rank, *t.mark, t.bounded]
        for t in titled
    ]


def load_facts(facts_json: bytes | str) -> SourceFacts:
    """The facts `dump_facts` wrote, each field of its type (a record that passed here stores without error);
    ValueError when they are not of that shape."""
    try:
        row = _FACTS_ROW.validate_json(facts_json)
    except pydantic.ValidationError as exc:
        raise ValueError(
            f"the source facts of a documents record do not read ({exc.error_count()} error(s): "
            f"{exc.errors()[0]['msg']})"
        ) from None
    summary_json, topic, text_hash, length, counted, arxiv_ids, titled, terms, signature = row
    stated = tuple(
        StatedTitle(
            n,
            TitledId.model_construct(id=i, title=title, source=source, strong=strong, rank=rank),
            (mark_id, mark_title),
            bounded,
        )
        for n, i, title, source, strong, rank, mark_id, mark_title, bounded in titled
    )
    return storable(
        SourceFacts(
            summary_json, topic, text_hash, length, counted, tuple(arxiv_ids), stated, terms, signature
        )
    )


def storable(facts: SourceFacts) -> SourceFacts:
    """The facts, unless the store cannot read their term counts or signature: ValueError."""
    # The store reads these two into term rows and a UBIGINT[] (predigest_native.FactRows): a wrong shape would
    # fail the batch, not the record. Checked natively: pydantic's dict and list of them cost ~14 µs a note.
    if not fact_json_reads(facts.terms_json, facts.signature_json):
        raise ValueError(
            "the source facts of a documents record do not read (term counts not a JSON object of INTEGER counts "
            "naming each term once, or a signature not a JSON list of u64)"
        )
    return facts
