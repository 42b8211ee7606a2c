"""The briefing browser's pages from real briefings: links to notes and sections, changes since the previous
briefing, D-item history, and hostile document text that stays text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from html.parser import HTMLParser

from processors.browse import (
    BriefingPage,
    Listing,
    NoteShown,
    briefing_page,
    changes,
    history,
    index_page,
    note_page,
    note_url,
    section_anchor,
    source_url,
)
from processors.models import Document
from processors.units import NoteNames
from tests.processors.notes import END, SH, brief, example_documents, living, note

# In code spans, which the parser keeps as written: the markup reaches the briefing as text.
HOSTILE = '`<script>document.body.append("PW"+"NED")</script>` `<img src=x onerror=alert(1)>` \u202efdp.md'


class _Tags(HTMLParser):
    """Every tag and attribute a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "href" and value is not None:
                self.hrefs.append(value)
            if name == "id" and value is not None:
                self.ids.add(value)
            if name.startswith("on"):
                self.handlers.append(name)


def _parsed(page: str) -> _Tags:
    tags = _Tags()
    tags.feed(page)
    return tags


@dataclass(frozen=True)
class _E:
    """An index entry as sinks.emissions lists it."""

    axis: str
    window_end: datetime
    trigger: str
    basename: str
    sources: int = 3
    increments: int = 1
    discrepancies: int = 0


def _hostile_note() -> Document:
    return note(
        "inbox/jay/2026-09-27-2100-evil.md",
        f"# {HOSTILE}\n\nvLLM KV cache serving arXiv:2609.23130 throughput 3.8× on H100 {HOSTILE}\n",
    )


def test_a_briefing_page_links_every_source_and_keeps_hostile_text_inert() -> None:
    docs = [*example_documents(), _hostile_note()]
    b = brief(docs, living_doc=living(), lang="en")
    page = briefing_page(BriefingPage(b, changes(b, None, None), history([], [])), SH, "en")
    tags = _parsed(page)
    assert "script" not in tags.tags and "img" not in tags.tags and not tags.handlers
    assert "PWNED" not in page and "&lt;script&gt;" in page  # shown, not run
    assert "\u202e" not in page and "\\u202e" in page  # the bidi override shown escaped
    for s in b.sources:  # every source links to its note
        assert note_url(s.path).replace("&", "&amp;") in page
    refs = {ref for inc in b.increments for ref in inc.sources if "#" in ref}
    assert refs, "increments cite sections of their sources"
    for ref in refs:  # …and an increment's `path#section` to the section
        assert source_url(ref).replace("&", "&amp;") in page
    assert all(h.startswith(("/browse", "http://", "https://")) for h in tags.hrefs), tags.hrefs
    related = {s for inc in b.increments for s in inc.related_sections}
    assert related, "the example relates increments to living-document sections"
    for label in related:  # …and each section to its place in the living document
        assert note_url("living/inference.md", section_anchor(label)).replace("&", "&amp;") in page


def test_a_note_whose_name_holds_a_hash_links_to_itself_and_to_its_sections() -> None:
    # Split at its own `#`, its link named a note that does not exist (and a heading's `#` a section cut short).
    path = "inbox/jay/2026-09-27-2100-C#-serving.md"
    doc = note(
        path,
        "# C# serving\n\n## C# bindings\n\nvLLM KV cache serving arXiv:2609.23130 throughput 3.8× on H100\n",
    )
    b = brief([*example_documents(), doc], living_doc=living(), lang="en")
    assert path in {s.path for s in b.sources}
    page = briefing_page(BriefingPage(b, changes(b, None, None), history([], [])), SH, "en")
    assert f'href="{note_url(path)}"'.replace("&", "&amp;") in page
    paths = NoteNames({path, "inbox/jay/a.md"})
    assert source_url(f"{path}#C# bindings", paths) == note_url(path, section_anchor("C# bindings"))
    assert source_url("inbox/jay/a.md#C# bindings", paths) == note_url(
        "inbox/jay/a.md", section_anchor("C# bindings")
    )
    assert source_url("inbox/jay/b.md#§2", paths) == note_url(
        "inbox/jay/b.md", section_anchor("§2")
    )  # not named


def test_changes_and_d_item_history_against_the_previous_briefing() -> None:
    day = timedelta(days=1)
    first = brief(example_documents(), living_doc=living(), lang="en", trigger="flush")
    second = brief([*example_documents(), _hostile_note()], living_doc=living(), lang="en")
    c = changes(second, first, "first-basename")
    assert c.sources_added == ["inbox/jay/2026-09-27-2100-evil.md"] and c.sources_gone == []
    assert changes(first, None, None).previous is None
    ids = [d.id for d in second.discrepancies]
    listings = [
        (Listing(END - day, "close", "older"), {ids[0]}),
        (Listing(END, "flush", "first-basename"), {d.id for d in first.discrepancies}),
        (Listing(END, "close", "second-basename"), set(ids)),
    ]
    found = history(ids, listings)
    page = briefing_page(BriefingPage(second, c, found), SH, "en")
    assert '/browse/inference/first-basename"' in page and "sources added" in page
    assert found[ids[0]][0].basename == "older"  # open since a day earlier
    assert f"open since {(END - day).astimezone(SH):%Y-%m-%d %H:%M}" in page
    for d in ids:
        assert found[d][-1].basename == "second-basename"
        assert d in _parsed(page).ids


def test_the_index_is_axis_by_date_and_a_note_page_anchors_its_sections() -> None:
    entries = [_E("inference", END, "close", "a"), _E("risk", END - timedelta(days=1), "flush", "b")]
    page = index_page(entries, ["inference", "risk"], SH, "zh")
    assert page.index("2026-09-27") < page.index("2026-09-26")  # newest first
    assert '/browse/inference/a"' in page and '/browse/risk/b"' in page

    doc = living()
    shown = note_page(doc.path, doc, [("f" * 64, END, True)], NoteShown(), SH, "en")
    numbered = [s.number for s in doc.sections if s.number]
    assert numbered and {section_anchor(n) for n in numbered} <= _parsed(shown).ids
