"""A summary split between `contents` and its source rows (schema 8) is rebuilt byte for byte as the parse wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.models import DocumentSummary
from processors.near_duplicates import NUM_PERM
from processors.source_facts import source_facts
from processors.summary_parts import SummaryRows, rest_of, whole_summary
from processors.wire import store_document
from tests.processors.test_documents_fuzz import markdown, yaml_scalars
from tests.state_support import parsed

_NOTES = {
    "inbox/jay/2026-09-27-1000-kv.md": "---\ntitle: KV cache\ntags: [infra]\n---\n# KV cache 缓存\n\n## Eviction\n\n"
    + "Paged attention keeps blocks. arXiv:2309.06180 (PagedAttention) " * 20
    + "\n",
    # Front matter whose own keys are the summary's (a nested `headings`, `warnings`, `signature`) and a quote.
    "inbox/mo/2026-09-27-1001-odd.md": '---\ntitle: "He said \\"no\\""\nextra:\n  headings: [a, b]\n'
    "  warnings: x\n  signature: [1, 2]\n---\n한국어 노트 텍스트 " * 3 + "\n",
    "inbox/mo/2026-09-27-1002-tiny.md": "tiny\n",  # no whole signature
}


def _utf8(summary_json: str | bytes) -> bytes:
    return summary_json.encode() if isinstance(summary_json, str) else summary_json


def _rows(summary_json: str | bytes) -> SummaryRows:
    """The summary as the state stores it: `contents`' rest and the source rows its facts make."""
    facts = source_facts(summary_json)
    signature = json.loads(facts.signature_json) or []
    return SummaryRows(
        facts.summary_json,
        rest_of(summary_json),
        list((json.loads(facts.terms_json) or {}).items()),
        signature if len(signature) == NUM_PERM else None,
        [(t.pair.id, t.pair.title, t.pair.source, t.pair.strong, t.pair.rank) for t in facts.titled],
    )


def test_every_summary_is_rebuilt_byte_for_byte_from_its_rest_and_rows() -> None:
    for path, text in _NOTES.items():
        summary = store_document(parsed(path, text)).summary_json
        assert whole_summary(_rows(summary)) == _utf8(summary), path


def test_contents_keeps_only_headings_front_matter_and_a_signature_that_is_not_whole() -> None:
    big = store_document(parsed(*next(iter(_NOTES.items())))).summary_json
    assert list(json.loads(rest_of(big))) == ["headings", "front_matter"]
    assert len(rest_of(big)) < len(big) / 3
    odd = json.loads(big) | {"signature": [1, 2, 3]}
    rest = rest_of(json.dumps(odd, separators=(",", ":"), ensure_ascii=False))
    assert json.loads(rest)["signature"] == [1, 2, 3]


def test_a_summary_written_otherwise_is_kept_whole_and_read_back_equal() -> None:
    summary = store_document(parsed(*next(iter(_NOTES.items())))).summary_json
    indented = json.dumps(json.loads(summary), indent=1, ensure_ascii=False)  # not compact: kept whole
    assert rest_of(indented) == indented.encode()
    rebuilt = whole_summary(_rows(indented))
    assert DocumentSummary.model_validate_json(rebuilt) == DocumentSummary.model_validate_json(summary)
    assert rebuilt == pydantic_core.to_json(json.loads(summary))


def test_the_examples_root_summaries_are_rebuilt_byte_for_byte() -> None:
    root = Path(__file__).parents[2] / "examples" / "root"
    notes = sorted(p for p in root.rglob("*.md") if "inbox" in p.parts or "briefings" in p.parts)
    assert notes
    for note in notes:
        summary = store_document(parsed(str(note.relative_to(root)), note.read_text())).summary_json
        assert whole_summary(_rows(summary)) == _utf8(summary), note


# Front matter whose keys are the summary's own fields (what `contents`' rest keeps whole), beside a note's blocks.
_SUMMARY_KEYS = st.dictionaries(
    st.sampled_from([*DocumentSummary.model_fields, "title", "x"]), yaml_scalars, max_size=6
).map(lambda d: "---\n" + "".join(f"{k}: {v}\n" for k, v in d.items()) + "---\n")


# The window agent stores each `rest_of` unchecked (a rebuild check at store time cost ~50 µs a note, ~4 % of a
# note's CPU): this property, over random notes in every folder, is the guarantee that the rest rebuilds instead.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(markdown, st.builds(lambda fm, md: fm + md, _SUMMARY_KEYS, markdown)))
def test_every_random_note_s_summary_is_rebuilt_byte_for_byte(text: str) -> None:
    for path in ("inbox/jay/2026-09-27-1000-x.md", "paper_cards/1417-2609-19969.md", "living/inference.md"):
        summary = store_document(parsed(path, text)).summary_json
        assert whole_summary(_rows(summary)) == _utf8(summary), path
