"""Build a benchmark root from its spec (bench/quality/roots/*.json): real files, rendered notes, and the truth.

Deterministic: the same spec and corpus give the same bytes and the same truth. Real files are copied
unchanged; notes are rendered from the templates beside the specs, quoting the real arXiv records. The truth
is derived from the real metadata and the rendered text by the bench's own parsers, plus the hand labels
committed beside the spec (`*_labels.json`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jinja2
import yaml

from bench.quality import corpus
from bench.quality.adapter import Axis
from bench.quality.titles import norm, similar
from bench.quality.truth import (
    DiscrepancyLabel,
    FileTruth,
    LivingSection,
    RootTruth,
    Scaffold,
    UnitTruth,
    clean_heading,
    heading_number,
)

ROOTS = Path(__file__).resolve().parent / "roots"
ROOT_NAMES = ("r1_kv_curated", "r2_zh_newsletters", "r3_en_noise")
_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-T](\d{2})(\d{2}))?(?![0-9])")
_BASELINE = re.compile(r"-e1prep\.md$")
_VERSION_GAP = 300.0  # seconds between the saved versions of one path


class SpecError(ValueError):
    """A root spec or its labels are inconsistent: fix the spec, the labels or the corpus."""


@dataclass(frozen=True)
class Version:
    content: bytes
    mtime: float


@dataclass(frozen=True)
class BuiltFile:
    path: str
    versions: tuple[Version, ...]
    late: bool = False  # held back until the second flush of the flush scenario

    @property
    def text(self) -> str:
        return self.versions[-1].content.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Day:
    end: datetime
    files: tuple[BuiltFile, ...]
    baselines: dict[str, str] = field(default_factory=dict)  # axis → path the previous close is written to


@dataclass(frozen=True)
class Flushes:
    day: int
    ends: tuple[datetime, ...]
    late_before: int  # the late files are written before this flush


@dataclass(frozen=True)
class Built:
    name: str
    about: str
    zone: ZoneInfo
    lang: str
    axes: tuple[Axis, ...]
    days: tuple[Day, ...]
    flushes: Flushes | None
    truth: RootTruth


def _local(value: str, zone: ZoneInfo) -> datetime:
    t = datetime.fromisoformat(value)
    return t.replace(tzinfo=zone) if t.tzinfo is None else t.astimezone(zone)


def event_time(path: str, text: str, zone: ZoneInfo) -> datetime | None:
    """Front-matter `date`, else the file-name stamp (DESIGN §2); None for a file with neither."""
    if text.startswith("---"):
        fm = text.split("---", 2)[1] if text.count("---") >= 2 else ""
        data = yaml.safe_load(fm) if fm.strip() else None
        if isinstance(data, dict) and data.get("date") is not None:
            value = data["date"]
            t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
            return t.replace(tzinfo=zone) if t.tzinfo is None else t.astimezone(zone)
    m = _STAMP.match(path.rsplit("/", 1)[-1])
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hh, mm = (int(m.group(4)), int(m.group(5))) if m.group(4) else (0, 0)
        return datetime(y, mo, d, hh, mm, tzinfo=zone)
    return None


def kind_of(path: str) -> str:
    top = path.split("/", 1)[0]
    if top == "inbox":
        return "baseline" if _BASELINE.search(path) else "inbox"
    return {"paper_cards": "paper_card", "work-queue": "work_queue", "living": "living"}[top]


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(ROOTS),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    records = corpus.arxiv_records()

    def paper(arxiv_id: str) -> corpus.Paper:
        if arxiv_id not in records:
            raise SpecError(f"template asks for arXiv {arxiv_id}, which is not among the 414 records")
        return records[arxiv_id]

    env.globals.update(p=paper, hf=corpus.hf_papers)
    env.filters["oneline"] = corpus.one_line
    return env


def _versions(entry: dict[str, Any], env: jinja2.Environment, zone: ZoneInfo) -> tuple[Version, ...]:
    if "template" in entry:
        contents = [env.get_template(entry["template"]).render(**entry.get("vars", {})).encode("utf-8")]
    elif "from" in entry:
        contents = [corpus.read_bytes(entry["from"])]
    else:
        contents = [corpus.read_bytes(rel) for rel in entry["versions"]]
    final = contents[-1].decode("utf-8", errors="replace")
    when = _local(entry["at"], zone) if "at" in entry else event_time(entry["path"], final, zone)
    if when is None:
        raise SpecError(f"{entry['path']}: no stamp, no front-matter date and no 'at' in the spec")
    last = when.timestamp()
    n = len(contents)
    return tuple(Version(c, last - (n - 1 - i) * _VERSION_GAP) for i, c in enumerate(contents))


def _load(name: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    spec = json.loads((ROOTS / f"{name}.json").read_text(encoding="utf-8"))
    labels = json.loads((ROOTS / spec["labels"]).read_text(encoding="utf-8"))
    shared = json.loads((ROOTS / "shared_scaffolds.json").read_text(encoding="utf-8"))["scaffolds"]
    return spec, labels, shared


def build(name: str) -> Built:
    """The root `name` (a file stem under bench/quality/roots), its files per day and its truth."""
    spec, labels, shared = _load(name)
    zone = ZoneInfo(spec["zone"])
    env = _env()
    days = []
    entries: dict[str, dict[str, Any]] = {}
    for day in spec["days"]:
        files = []
        for entry in day["files"]:
            files.append(BuiltFile(entry["path"], _versions(entry, env, zone), bool(entry.get("late"))))
            entries[entry["path"]] = entry
        days.append(Day(_local(day["end"], zone), tuple(files), dict(day.get("baselines", {}))))
    flushes = None
    if "flushes" in spec:
        f = spec["flushes"]
        flushes = Flushes(f["day"], tuple(_local(e, zone) for e in f["ends"]), f["late_before"])
    axes = tuple(Axis(a["name"], tuple(a.get("keywords", ())), a.get("living_doc")) for a in spec["axes"])
    built_files = {f.path: f for d in days for f in d.files}
    truth = derive_truth(spec, labels, shared, built_files, entries, zone)
    return Built(
        spec["name"], spec.get("about", ""), zone, spec.get("lang", "zh"), axes, tuple(days), flushes, truth
    )


# ---- truth ----------------------------------------------------------------------------------------------


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def _title_candidates(spec: dict[str, Any], files: dict[str, BuiltFile]) -> dict[str, list[tuple[str, str]]]:
    """arXiv id → (source, title) from every real source, most authoritative first."""
    out: dict[str, list[tuple[str, str]]] = {}
    for pid, paper in corpus.arxiv_records().items():
        out.setdefault(pid, []).append(("arxiv record", paper.title_line))
    for rel in spec.get("title_sources", []):
        for e in corpus.hf_papers(rel):
            out.setdefault(e.id, []).append((rel, corpus.one_line(e.title)))
    for f in files.values():
        for d in corpus.digest_entries(f.text):
            out.setdefault(d.id, []).append((f.path, d.title))
        if kind_of(f.path) == "living":
            for pid, text in corpus.link_titles(f.text):
                out.setdefault(pid, []).append((f.path, corpus.one_line(text)))
    return out


def _titles(
    spec: dict[str, Any], labels: dict[str, Any], files: dict[str, BuiltFile], cited: set[str]
) -> dict[str, tuple[str, ...]]:
    overrides = _strip(labels.get("titles", {}))
    candidates = _title_candidates(spec, files)
    titles: dict[str, tuple[str, ...]] = {}
    conflicts = []
    for pid in sorted(cited):
        if pid in overrides:
            value = overrides[pid]
            titles[pid] = (value,) if isinstance(value, str) else tuple(value)
            continue
        found = candidates.get(pid, [])
        if not found:
            continue
        first = found[0][1]
        bad = [(src, t) for src, t in found[1:] if not similar(first, t, 0.5)]
        if bad:
            conflicts.append(f"{pid}: {found[0][0]} says {first!r}, {bad[0][0]} says {bad[0][1]!r}")
        titles[pid] = (first,)
    if conflicts:
        raise SpecError(
            "titles disagree; label the true one in the labels' 'titles':\n" + "\n".join(conflicts)
        )
    return titles


def _paper_of(h: corpus.Heading, by_title: dict[str, str]) -> str | None:
    ids = list(dict.fromkeys(corpus.ID.findall(h.text)))
    if len(ids) == 1:
        return ids[0]
    news = corpus.newsletter_papers(f"### {h.text}\n{h.body}") if h.level == 3 else []
    if news:
        return news[0].ids[0] if news[0].ids else by_title.get(norm(news[0].title))
    return None


def _unit_axes(
    h: corpus.Heading,
    ids: tuple[str, ...],
    paper: str | None,
    rule: dict[str, Any],
    id_axes: dict[str, list[str]],
) -> tuple[str, ...]:
    for needle, axes in rule.get("by_heading", {}).items():
        if needle.lower() in h.text.lower():
            return tuple(axes)
    if rule.get("by_id"):
        keys = [paper] if paper else list(ids)
        found = [a for k in keys if k for a in id_axes.get(k, [])]
        if found:
            return tuple(dict.fromkeys(found))
    return tuple(rule.get("default", []))


def _body(text: str) -> str:
    """The text without its YAML front matter (a reader never sees it as a section)."""
    if text.startswith("---"):
        parts = text.split("\n---", 1)
        if len(parts) == 2:
            return parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    return text


def _file_truth(
    f: BuiltFile,
    entry: dict[str, Any],
    id_axes: dict[str, list[str]],
    by_title: dict[str, str],
    zone: ZoneInfo,
) -> FileTruth:
    rule = entry.get("truth", {})
    kind = kind_of(f.path)
    text = f.text
    units = []
    for h in corpus.headings(_body(text)):
        ids = tuple(dict.fromkeys(corpus.ID.findall(f"{h.text}\n{h.body}")))
        paper = _paper_of(h, by_title)
        if kind == "paper_card":
            paper = entry.get("vars", {}).get("arxiv")
        axes = _unit_axes(h, ids, paper, rule, id_axes)
        chars = len("".join(h.body.split()))
        units.append(UnitTruth(h.text, heading_number(h.text), h.level, ids, axes, paper, chars))
    ids = tuple(dict.fromkeys(corpus.ID.findall(text)))
    when = None if kind == "living" else event_time(f.path, text, zone)
    return FileTruth(f.path, kind, when, tuple(rule.get("whole", [])), tuple(units), ids)


def _living(
    spec: dict[str, Any], labels: dict[str, Any], files: dict[str, BuiltFile]
) -> tuple[dict[str, tuple[LivingSection, ...]], dict[str, tuple[str, ...]]]:
    living: dict[str, tuple[LivingSection, ...]] = {}
    fits: dict[str, set[str]] = {}
    for axis in spec["axes"]:
        path = axis.get("living_doc")
        if not path or path not in files:
            continue
        conf = labels.get("living", {}).get(axis["name"], {})
        boiler = set(conf.get("boilerplate", []))
        sections = []
        for h in corpus.headings(files[path].text):
            name = clean_heading(h.text)
            ids = tuple(dict.fromkeys(corpus.ID.findall(f"{h.text}\n{h.body}")))
            sections.append(LivingSection(name, h.text, name in boiler, ids))
            for pid in ids if name not in boiler else ():
                fits.setdefault(pid, set()).add(name)
        living[axis["name"]] = tuple(sections)
        names = {s.name for s in sections}
        for pid, wanted in _strip(conf.get("fits", {})).items():
            unknown = set(wanted) - names
            if unknown:
                raise SpecError(f"fits of {pid} name sections the living document lacks: {sorted(unknown)}")
            fits.setdefault(pid, set()).update(wanted)
    return living, {k: tuple(sorted(v)) for k, v in fits.items()}


def _check_labels(
    files: dict[str, BuiltFile], labels: dict[str, Any], cited: set[str], ids: list[str]
) -> None:
    """Labels that name nothing in the root are stale: every labelled id and scaffolding string must occur,
    and a writer's excluded item must occur in one file only (else it cannot be told from real content)."""
    stale = sorted(set(ids) - cited)
    texts = {path: f.text.lower() for path, f in files.items()}
    for s in labels.get("scaffolds", []):
        for needle in [*s.get("any", ()), *s.get("all", ())]:
            where = [p for p, text in texts.items() if needle.lower() in text]
            if not where:
                stale.append(f"scaffold {needle!r}")
            elif s["kind"] == "excluded" and len(where) > 1:
                stale.append(f"excluded item {needle!r} occurs in {len(where)} files")
    if stale:
        raise SpecError("labels that do not fit the root: " + ", ".join(stale))


def derive_truth(
    spec: dict[str, Any],
    labels: dict[str, Any],
    shared: list[dict[str, Any]],
    files: dict[str, BuiltFile],
    entries: dict[str, dict[str, Any]],
    zone: ZoneInfo,
) -> RootTruth:
    id_axes = _strip(labels.get("id_axes", {}))
    cited = {i for f in files.values() for i in corpus.ID.findall(f.text)}
    hf_titles = {norm(e.title): e.id for rel in spec.get("title_sources", []) for e in corpus.hf_papers(rel)}
    cited |= {
        pid
        for f in files.values()
        for p in corpus.newsletter_papers(f.text)
        if (pid := hf_titles.get(norm(p.title)))
    }
    titles = _titles(spec, labels, files, cited)
    # A newsletter's translated heading is an accepted title of its paper too.
    for f in files.values():
        for p in corpus.newsletter_papers(f.text):
            pid = p.ids[0] if p.ids else hf_titles.get(norm(p.title))
            if pid in titles and p.heading not in titles[pid]:
                titles[pid] = (*titles[pid], p.heading)
    truths = {path: _file_truth(f, entries[path], id_axes, hf_titles, zone) for path, f in files.items()}
    living, fits = _living(spec, labels, files)
    scaffolds = tuple(
        Scaffold(s["kind"], tuple(s.get("any", ())), tuple(s.get("all", ())))
        for s in [*shared, *labels.get("scaffolds", [])]
    )
    items = tuple(
        DiscrepancyLabel(
            d["id"], d["real"], d["planted"], tuple(d["all"]), d["note"], tuple(d.get("suspect_ids", ()))
        )
        for d in labels.get("discrepancies", [])
    )
    fit_labels = [
        k for a in spec["axes"] for k in _strip(labels.get("living", {}).get(a["name"], {}).get("fits", {}))
    ]
    _check_labels(files, labels, cited, [*id_axes, *fit_labels, *(i for d in items for i in d.suspect_ids)])
    hand = {
        "on-axis ids (by reading)": sorted(id_axes),
        "on-axis sections of the notes": sorted(
            p for p, e in entries.items() if "truth" in e and not e["truth"].get("by_id")
        ),
        "titles": sorted(_strip(labels.get("titles", {}))),
        "section fits": sorted(fit_labels),
        "discrepancies": [d.id for d in items],
    }
    return RootTruth(
        spec["name"], tuple(spec["scored_axes"]), titles, truths, living, fits, scaffolds, items, hand
    )
