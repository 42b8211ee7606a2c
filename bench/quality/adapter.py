"""The one place the quality benchmark calls the product: it routes files and briefs windows as the worker does.

Everything else in bench/quality sees plain data: which axes a file was routed to, and each emitted briefing
as its `predigest.briefing/v1` JSON (a dict) and its Markdown. When the processors' API changes, this module
is the only one to follow it.

What it mirrors (streams/pipeline.py and sinks/state.py, without Kafka or DuckDB):
- a written file is one raw record with the next raw offset; `route_file` parses it and fans it out to axes,
  and the documents records it returns are decoded and applied as the window agent applies them;
- the current version of a path is the one with the highest raw offset, the others are superseded;
- a briefing gets the window's current summaries (whole documents through a loader), yesterday's baseline,
  the ids of the axis's earlier briefings, the highest D number used so far, the living documents, the
  window's superseded versions and rejections, and no arXiv records (enrichment off: titles come from notes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from processors.briefing import assemble_briefing
from processors.briefing_request import BriefingHistory, BriefingRequest
from processors.documents import DEFAULT_MAX_BYTES
from processors.models import AxisSpec, Briefing, Document, DocumentSummary, RawFile, Rejection, Trigger
from processors.parse_stage import RouteParams, route_file
from processors.render_markdown import render_markdown
from processors.window import in_window, window_bounds
from processors.wire import StoredDocument, decode_rows, load_document, load_summary
from streams.settings import KAFKA_MESSAGE_BYTES

# As streams.pipeline.route_params: headroom for the key and the batch header.
_MESSAGE_LIMIT = KAFKA_MESSAGE_BYTES - 64 * 1024


@dataclass(frozen=True)
class Axis:
    """One configured axis, as the bench's root specs state it."""

    name: str
    keywords: tuple[str, ...] = ()
    living_doc: str | None = None


@dataclass(frozen=True)
class Emitted:
    """One emitted briefing: its JSON (schema v1) and its Markdown."""

    axis: str
    trigger: str
    end: datetime
    json: dict[str, Any]
    markdown: str


@dataclass
class _Version:
    offset: int
    stored: StoredDocument
    kind: str
    event_time: datetime
    baseline_axis: str | None


@dataclass
class _Path:
    versions: dict[str, _Version] = field(default_factory=dict)  # sha256 → version
    deleted_at: int | None = None  # raw offset of the deletion

    def current(self) -> _Version | None:
        if not self.versions:
            return None
        best = max(self.versions.values(), key=lambda v: v.offset)
        return None if self.deleted_at is not None and self.deleted_at > best.offset else best


class Worker:
    """One worker's state for one root, fed file by file, briefing on demand."""

    def __init__(
        self, axes: Sequence[Axis], zone: ZoneInfo, lang: str = "zh", window: timedelta = timedelta(hours=24)
    ) -> None:
        self.axes = tuple(AxisSpec(name=a.name, keywords=a.keywords, living_doc=a.living_doc) for a in axes)
        self.zone = zone
        self.lang = lang
        self.window = window
        self._params = RouteParams(
            axes=self.axes, zone=zone, max_bytes=DEFAULT_MAX_BYTES, message_limit=_MESSAGE_LIMIT
        )
        self._offset = 0
        self._paths: dict[tuple[str, str], _Path] = {}
        self._rejected: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._emitted: dict[tuple[str, datetime, str], tuple[Briefing, str]] = {}
        self.routed: dict[str, tuple[str, ...]] = {}  # path → axes its latest version was routed to

    # ---- the parse stage and the window agent's store ------------------------------------------------

    def write(self, path: str, content: bytes, mtime: float) -> None:
        """A file written (or rewritten) at `mtime`: one raw record, routed and stored."""
        raw = RawFile(
            path=path,
            content=content,
            size=len(content),
            mtime=mtime,
            sha256=hashlib.sha256(content).hexdigest(),
        )
        self._route(raw)

    def delete(self, path: str, mtime: float) -> None:
        self._route(RawFile(path=path, content=b"", size=0, mtime=mtime, sha256="", deleted=True))

    def _route(self, raw: RawFile) -> None:
        self._offset += 1
        seen_at = datetime.fromtimestamp(raw.mtime, UTC)
        routed = route_file(raw, self._params, seen_at, self._offset)
        axes: list[str] = []
        for record in (row for _key, value in routed.records for row in decode_rows(value)):
            h = record.header
            if h.type == "rejection":
                self._rejected.setdefault((h.path, h.sha256), (h.reason or "rejected", h.seen_at))
            elif h.type == "deletion" and h.axis:
                self._paths.setdefault((h.axis, h.path), _Path()).deleted_at = self._offset
            elif h.type == "document" and h.axis and record.stored is not None:
                assert h.kind is not None and h.event_time is not None
                summary = load_summary(record.stored.summary_json)
                slot = self._paths.setdefault((h.axis, h.path), _Path())
                slot.versions[h.sha256] = _Version(
                    self._offset, record.stored, h.kind, h.event_time, summary.baseline_axis
                )
                axes.append(h.axis)
        if not raw.deleted:
            self.routed[raw.path] = tuple(axes)

    # ---- the window agent's reads --------------------------------------------------------------------

    def _current(self, axis: str) -> list[tuple[str, _Version]]:
        out = []
        for (a, path), slot in self._paths.items():
            v = slot.current() if a == axis else None
            if v is not None:
                out.append((path, v))
        return sorted(out, key=lambda pv: (pv[1].event_time, pv[0]))

    def _living(self, axis: str) -> Document | None:
        docs = [v for _, v in self._current(axis) if v.kind == "living"]
        return load_document(docs[-1].stored) if docs else None

    def _superseded(self, axis: str, start: datetime, end: datetime) -> list[DocumentSummary]:
        out = []
        for (a, _path), slot in self._paths.items():
            current = slot.current()
            for v in slot.versions.values():
                if a == axis and v is not current and v.kind != "living" and start <= v.event_time < end:
                    out.append(load_summary(v.stored.summary_json))
        return sorted(out, key=lambda d: (d.event_time, d.path))

    # ---- the control agent's briefing ----------------------------------------------------------------

    def brief(self, axis: str, end: datetime, trigger: Trigger) -> Emitted:
        """The briefing of the window ending at `end`, once per (axis, end, trigger), as the worker emits it."""
        key = (axis, end, trigger)
        if key not in self._emitted:
            briefing = self._assemble(axis, end, trigger)
            markdown = render_markdown(briefing, lang="en" if self.lang == "en" else "zh", zone=self.zone)
            self._emitted[key] = (briefing, markdown)
        briefing, markdown = self._emitted[key]
        data = json.loads(briefing.model_dump_json(by_alias=True))
        return Emitted(axis=axis, trigger=trigger, end=end, json=data, markdown=markdown)

    def _assemble(self, axis_name: str, end: datetime, trigger: Trigger) -> Briefing:
        axis = next(a for a in self.axes if a.name == axis_name)
        window = window_bounds(end, self.window)
        current = self._current(axis_name)
        in_win = [(p, v) for p, v in current if v.kind != "living" and in_window(v.event_time, window)]
        documents: list[DocumentSummary] = [load_summary(v.stored.summary_json) for _, v in in_win]
        stored = {p: v.stored for p, v in in_win}
        # Yesterday's briefing is usually stamped with its date only (00:00), before the window opens.
        since = window.start - self.window
        olds = [
            (p, v)
            for p, v in current
            if v.kind == "baseline" and v.baseline_axis == axis_name and since <= v.event_time < window.start
        ]
        baseline = load_document(olds[-1][1].stored) if olds else None
        # As the worker: D numbers from every briefing of the axis, cited ids and titles from earlier ones.
        recorded = [
            (e, t, b)
            for (a, e, t), (b, _md) in sorted(self._emitted.items(), key=lambda kv: kv[0][1])
            if a == axis_name
        ]
        earlier = [b for e, _t, b in recorded if e < end]
        others = [b for e, t, b in recorded if e >= end and (e, t) != (end, trigger)]
        own = [
            load_document(stored[d.path])
            for d in documents
            if d.kind == "baseline" and d.baseline_axis == axis_name
        ]
        baselines = [*own, *([baseline] if baseline else [])]
        if baseline is not None:
            documents.append(baseline)
        history = BriefingHistory.of(earlier, (d.text for d in baselines), others)

        def load(paths: Sequence[str]) -> list[Document]:
            return [load_document(stored[p]) for p in paths if p in stored]

        rejected = [
            Rejection(path=path, reason=reason)
            for (path, _sha), (reason, seen) in sorted(self._rejected.items())
            if in_window(seen, window)
        ]
        return assemble_briefing(
            BriefingRequest(
                axis=axis,
                trigger=trigger,
                window=window,
                generated_at=end,
                zone=self.zone,
                documents=documents,
                living=self._living(axis_name),
                axes=self.axes,
                other_living={a.name: self._living(a.name) for a in self.axes if a.name != axis_name},
                superseded=self._superseded(axis_name, window.start, window.end),
                rejected=rejected,
                history=history,
                lang="en" if self.lang == "en" else "zh",
                load=load,
            )
        )
