"""Render a v1 briefing as Markdown in the example's section order (zh or en), through a Jinja2 template."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import jinja2
from predigest_native import markdown_plain

from processors.i18n import LABELS, Lang, relevance_label
from processors.inert import markdown_inline
from processors.models import Briefing, Increment, NoIncrementSource, SourceEntry
from processors.placement import join_labels
from processors.reasons import NO_INCREMENT_CODES, UNREAD_CODES, NoIncrementCode

_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩"
# 六 lists a reason's sources one by one up to LIST_ALL; above, its count and the first LIST_FIRST (the JSON's
# no_increment_sources has every one), so a window of 500 digests stays readable.
LIST_ALL = 12
LIST_FIRST = 5
SUMMARY_IDS = 12  # ids a summary line names; 四 lists every one
SOURCES_AT_ONCE = 2000  # sources whose 一 rows and 五 items are joined at a time
_TIME = "%Y-%m-%d %H:%M"
_LABELLED = ("used", "no_increment")  # statuses a row does not repeat, worded by a fixed label
_HOUR_MINUTE = tuple(f"{h:02d}:{m:02d}" for h in range(24) for m in range(60))  # %H:%M of a minute of the day


class _Trusted(str):
    """Text the template wrote itself (a table header, its values escaped); `esc` leaves it alone."""


# What esc changes (processors.inert.markdown_inline): `<`, `>`, `&`, `|`, `\`, `[` (every link and image
# starts with one), whitespace but a lone space (a double space too), bidi and control characters. Most cells
# have none of it: whether one has is read natively (`markdown_plain`, one pass over the string's code points;
# the character class's regex, `tests/processors/reference/markdown_plain.py`, took ~12 ns a character, ~30 ms
# of a 10k window's Markdown).
_plain = markdown_plain  # whether `esc` leaves the text as it is


def esc(value: Any) -> str:
    """Document text as inert one-line Markdown: nothing breaks a table, links only to http(s), no image."""
    if isinstance(value, _Trusted):
        return str(value)
    text = str(value) if value is not None else ""
    if _plain(text):
        return text
    return markdown_inline(text)


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("processors", "templates"),
    autoescape=False,  # Markdown, not HTML: `esc` (finalize) escapes every value instead
    finalize=esc,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
_ENV.filters["safe_table_header"] = _Trusted
_ENV.filters["esc"] = esc
_TEMPLATE = "briefing.md.j2"


def load_template() -> None:
    """Compile the briefing's template now (~25 ms), at a worker's start, rather than in its first briefing."""
    _ENV.get_template(_TEMPLATE)


def _size(n: int) -> str:
    kb = n / 1024
    return f"{kb:.1f}KB" if kb < 10 else f"{round(kb)}KB"


@dataclass(frozen=True)
class ReasonGroup:
    """六's sources of one no-increment reason: how many, and the ones listed."""

    code: NoIncrementCode
    count: int
    shown: list[NoIncrementSource]


def reason_groups(items: Sequence[NoIncrementSource]) -> list[ReasonGroup]:
    """The no-increment sources grouped by reason, in NO_INCREMENT_CODES order, each in window order."""
    by_code: dict[NoIncrementCode, list[NoIncrementSource]] = {}
    for n in items:
        by_code.setdefault(n.code, []).append(n)
    return [
        ReasonGroup(code, len(group), group if len(group) <= LIST_ALL else group[:LIST_FIRST])
        for code in NO_INCREMENT_CODES
        if (group := by_code.get(code))
    ]


@dataclass(frozen=True)
class _View:
    """What the template calls to word a briefing's parts in one language and zone."""

    t: dict[str, str]
    lang: Lang
    zone: ZoneInfo
    living: str
    unread: str | None = None  # why the living document, stored, does not read back (its rejection code)

    def status(self, s: SourceEntry) -> str:
        t = self.t
        if s.status == "duplicate" and s.duplicate_kind == "near":
            return t["near_duplicate"].format(of=s.duplicate_of or "?", similarity=f"{s.similarity or 0:.2f}")
        return t["duplicate"].format(of=s.duplicate_of or "?") if s.status == "duplicate" else t[s.status]

    def relevance(self, s: SourceEntry) -> str:
        return f"{relevance_label(s.relevance.code, self.lang)} {'⭐' * s.relevance.stars}".strip()

    def increment_heading(self, inc: Increment) -> str:
        stars = "⭐" * inc.stars
        ids = " / ".join(inc.arxiv)
        if inc.arxiv and inc.named():
            return self.t["inc_id"].format(rank=inc.rank, ids=ids, title=inc.title, stars=stars)
        return self.t["inc_doc"].format(
            rank=inc.rank, title=f"arXiv {ids}" if inc.arxiv else inc.title, stars=stars
        )

    def named(self, label: str, title: str, style: str = "{label}{lp}{title}{rp}") -> str:
        # A §-less section's label is its title: print it once, never `Survey Survey`.
        if title and title != label:
            return style.format(label=label, title=title, lp=self.t["lp"], rp=self.t["rp"])
        return label

    def _related(self, label: str, title: str) -> str:
        # zh runs `§3.3（Cache Compression）已锚定` together, but keeps a space after a bare title.
        sec = self.named(label, title)
        return sec if self.lang == "en" or sec.endswith(self.t["rp"]) else f"{sec} "

    def relation(self, inc: Increment) -> str:
        t = self.t
        parts = [
            t["rel_anchored"].format(sec=self._related(r.section, r.title), names=" / ".join(r.anchored))
            if r.anchored
            else t["rel_plain"].format(sec=self._related(r.section, r.title))
            for r in inc.relations
        ]
        if not parts:
            return t["rel_none" if self.unread is None else "rel_damaged"].format(doc=self.living_said)
        tail = t["rel_new"] if inc.novelty == "new" else t["rel_cont"]
        if inc.highlights:
            tail += t["sep"] + t["rel_figures"].format(figures=" / ".join(inc.highlights))
        return f"{self.living} " + t["semi"].join(parts) + t["semi"] + tail

    def unplaced(self, inc: Increment) -> str:
        """Why 二 suggests no section: a living document stored but not read back said by its rejected code."""
        reason = inc.unplaced_reason or "tbd"
        if reason == "living_document_damaged" and self.unread is not None:
            return self.t[f"living_document_{self.unread}"]
        return self.t[reason]

    @property
    def living_said(self) -> str:
        """The living document as the summary line and 二 name it: saying so when it does not read back."""
        if self.unread is None:
            return self.living
        return self.t[f"living_{self.unread}"].format(living=self.living)

    def source_rows(self, sources: Sequence[SourceEntry], marks: _Marks) -> _Trusted:
        """一's rows, one per source, each value escaped as the template's `finalize` would (a window of 100k
        sources in Python's time, not Jinja's); what the items' pass reuses goes into `marks`."""
        lp, rp, zone = self.t["lp"], self.t["rp"], self.zone
        shown: dict[tuple[str, int], str] = {}  # relevance column text, by (code, stars)
        rows: list[str] = []
        for s in sources:
            t = s.event_time.astimezone(zone)
            minute = t.hour * 60 + t.minute
            folder, _, name = s.path.rpartition("/")
            extra = "" if s.status in _LABELLED else f" · {self.status(s)}"
            cell = f"{name}{lp}{_HOUR_MINUTE[minute]} · {_size(s.bytes)} · {s.topic or s.title}{extra}{rp}"
            key = (s.relevance.code, s.relevance.stars)
            rel = shown.get(key) or shown.setdefault(key, esc(self.relevance(s)))
            # One search for the whole row: a part with something to escape makes the joined text match (no
            # pattern spans the `x` between them). Most rows have none, and each value passes as it is.
            plain = _plain(f"{s.path}x{cell}")
            marks.add(minute, plain)
            if plain:
                rows.append(f"| {folder or '.'} | {cell} | {rel} |")
            else:
                rows.append(f"| {esc(folder or '.')} | {esc(cell)} | {rel} |")
        return _Trusted("\n".join(rows))

    def source_items(self, sources: Sequence[SourceEntry], marks: _Marks, at: int) -> _Trusted:
        """五's items of `sources`, from the `at`-th source on, escaped as `source_rows` escaped their rows."""
        lp, rp = esc(self.t["lp"]), esc(self.t["rp"])
        labelled = {code: (self.t[code], _plain(self.t[code])) for code in _LABELLED}
        items: list[str] = []
        minutes, plains = marks.minutes, marks.plain
        for i, s in enumerate(sources, at):
            when, topic = f"{_HOUR_MINUTE[minutes[i]]} · {_size(s.bytes)}", s.topic or s.title
            # The row's search covered the path, time and topic, and the status unless it is a fixed label.
            status, plain = labelled[s.status] if s.status in labelled else (self.status(s), True)
            if plain and plains[i]:
                items.append(f"- {s.path}{lp}{when} · {topic} · {status}{rp}")
            else:
                items.append(f"- {esc(s.path)}{lp}{esc(when)} · {esc(topic)} · {esc(status)}{rp}")
        return _Trusted("\n".join(items))

    def id_run(self, ids: Sequence[str]) -> str:
        # 四 lists them all: a summary line names the first few, so a window of digests keeps it one line.
        shown = " / ".join(ids[:SUMMARY_IDS]) or "—"
        more = len(ids) - SUMMARY_IDS
        return shown + (" " + self.t["more_ids"].format(n=more) if more > 0 else "")


@dataclass
class _Marks:
    """Per source, what the rows' pass worked out that the items' pass needs again: its minute of the day in the
    briefing's zone and whether its row needed no escaping (3 bytes a source)."""

    minutes: array[int] = field(default_factory=lambda: array("H"))
    plain: bytearray = field(default_factory=bytearray)

    def add(self, minute: int, plain: bool) -> None:
        self.minutes.append(minute)
        self.plain.append(plain)


class _SourceLines:
    """一's rows and 五's items made a slice of sources at a time, each as the template writes it: neither held
    whole (a 100k window's are ~100 MB as two whole str). The items are made in a pass of their own rather than
    kept from the rows' (~19 MiB of UTF-8 held until their turn, at the 100k briefing's peak)."""

    def __init__(self, view: _View, sources: Sequence[SourceEntry]) -> None:
        self._view = view
        self._sources = sources
        self._marks = _Marks()

    def table(self) -> Iterator[_Trusted]:
        """The rows, each piece ending with a line break (the template's own is trimmed after its loop)."""
        for at in range(0, len(self._sources), SOURCES_AT_ONCE):
            rows = self._view.source_rows(self._sources[at : at + SOURCES_AT_ONCE], self._marks)
            yield _Trusted(f"{rows}\n")

    def items(self) -> Iterator[_Trusted]:
        """The list's pieces, likewise, once the table's were written (五 comes after 一)."""
        for at in range(0, len(self._sources), SOURCES_AT_ONCE):
            items = self._view.source_items(self._sources[at : at + SOURCES_AT_ONCE], self._marks, at)
            yield _Trusted(f"{items}\n")


def _core(b: Briefing, t: dict[str, str]) -> str:
    """状态摘要's 核心新增: each increment's ids, name and figures, numbered ① ② …"""
    return " ".join(
        f"{_CIRCLED[i] if i < len(_CIRCLED) else i + 1} "
        + " ".join(x for x in (f"arXiv {'/'.join(inc.arxiv)}" if inc.arxiv else "", inc.named()) if x)
        + (f"{t['lp']}{' / '.join(inc.highlights)}{t['rp']}" if inc.highlights else "")
        for i, inc in enumerate(b.increments)
    )


def _footer(b: Briefing, t: dict[str, str], zone: ZoneInfo, statuses: Mapping[str, int]) -> str:
    return t["footer"].format(
        at=b.generated_at.astimezone(zone).strftime(_TIME + " %Z"),
        n=b.summary.increment_count,
        titles=" / ".join(inc.named() or f"arXiv {inc.title}" for inc in b.increments) or "—",
        x=len(b.summary.new_arxiv),
        y=len(b.summary.continued_arxiv),
        s=len(b.sources),
        d=statuses["duplicate"],
        r=len(b.rejected),
    )


def _living_unread(b: Briefing) -> str | None:
    """Why the briefing's living document is listed among its rejected (stored, not read back); None if not."""
    path = b.living_doc.path
    if path is None:
        return None
    return next((r.reason_code for r in b.rejected if r.path == path and r.reason_code in UNREAD_CODES), None)


def render_markdown(b: Briefing, *, lang: Lang = "zh", zone: ZoneInfo) -> str:
    """The Markdown briefing: title, 状态摘要, sections 一 to 七 and the footer."""
    return "".join(markdown_pieces(b, lang=lang, zone=zone))


def markdown_pieces(b: Briefing, *, lang: Lang = "zh", zone: ZoneInfo) -> Iterator[str]:
    """`render_markdown`'s text in the template's pieces, in order: a 100k window's is not held whole."""
    t = LABELS[lang]
    start, end = b.window.start.astimezone(zone), b.window.end.astimezone(zone)
    living = " ".join(x.rsplit("/", 1)[-1] for x in (b.living_doc.path, b.living_doc.version) if x) or "—"
    view = _View(t, lang, zone, living, _living_unread(b))
    lo, hi = b.summary.target_range
    lines = _SourceLines(view, b.sources)
    # One pass over a window's sources, not one per count.
    statuses: Counter[str] = Counter(s.status for s in b.sources)
    return _ENV.get_template(_TEMPLATE).generate(
        b=b,
        t=t,
        end_date=end.strftime("%Y-%m-%d"),
        window=f"{start.strftime(_TIME)} ~ {end.strftime(_TIME)}",
        lo=lo,
        hi=hi,
        in_range=lo <= b.summary.increment_count <= hi,
        living=living,
        living_said=view.living_said,
        core=_core(b, t),
        unverified=[a.id for a in b.arxiv if a.metadata.source == "document"],
        id_run=view.id_run,
        groups=reason_groups(b.no_increment_sources),
        footer=_footer(b, t, zone, statuses),
        count=statuses.__getitem__,
        source_table=lines.table(),
        source_list=lines.items(),
        increment_heading=view.increment_heading,
        relation=view.relation,
        unplaced=view.unplaced,
        named=view.named,
        join_labels=lambda labels: join_labels(labels, lang),
    )
