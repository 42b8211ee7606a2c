"""Each quality root builds deterministically from the vendored corpus, and its truth fits the files it built."""

from __future__ import annotations

from functools import cache

import pytest

from bench.quality.builder import ROOT_NAMES, Built, build, kind_of
from bench.quality.corpus import ID
from bench.quality.titles import norm


@cache
def _built(name: str) -> Built:
    return build(name)


def _texts(b: Built) -> dict[str, str]:
    return {f.path: f.text for d in b.days for f in d.files}


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_every_truth_id_appears_in_the_root(name: str) -> None:
    b = _built(name)
    texts = _texts(b)
    everything = "\n".join(texts.values())
    ids = set(ID.findall(everything))
    normalised = norm(everything)
    for pid, titles in b.truth.titles.items():
        # Papers of the id-less newsletters are known by their title only.
        assert pid in ids or any(norm(t) in normalised for t in titles), pid
    assert set(b.truth.fits) <= ids | set(b.truth.titles)
    assert b.truth.suspect_ids <= ids
    for path, f in b.truth.files.items():
        assert path in texts and f.kind == kind_of(path)
        assert set(f.ids) == set(ID.findall(texts[path]))
        for u in f.units:
            assert set(u.ids) <= set(f.ids)


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_the_root_is_laid_out_as_design_section_2_and_dated_after_its_ids(name: str) -> None:
    b = _built(name)
    for day in b.days:
        for f in day.files:
            top = f.path.split("/")[0]
            assert top in {"inbox", "paper_cards", "work-queue", "living"}
            when = b.truth.files[f.path].event_time
            if when is None:
                continue
            assert when < day.end
            yymm = (when.year % 100, when.month)
            late = [i for i in ID.findall(f.text) if (int(i[:2]), int(i[2:4])) > yymm]
            assert set(late) <= b.truth.suspect_ids, (
                f"{f.path}: {late} postdate the note and are not labelled"
            )


def test_building_twice_gives_the_same_bytes_and_truth() -> None:
    a, b = build("r1_kv_curated"), _built("r1_kv_curated")
    assert [v.content for d in a.days for f in d.files for v in f.versions] == [
        v.content for d in b.days for f in d.files for v in f.versions
    ]
    assert a.truth.to_json() == b.truth.to_json()


def test_the_planted_material_is_where_the_labels_say() -> None:
    b = _built("r1_kv_curated")
    texts = _texts(b)
    assert "2404.14496" in texts["inbox/tom/2026-08-04-1410-serving-papers.md"]
    assert "확인 필요" in texts["inbox/spark/2026-08-04-1940-kv-weekly-ko.md"]
    assert "| Date | Title | Authors | Venue | Link |" in texts["inbox/jay/2026-08-04-0930-kv-paper-table.md"]
    living = b.truth.living["inference"]
    assert {s.name for s in living if s.boilerplate} == {"", "News", "Notice", "Project"}
    assert b.truth.fits["2505.20334"] == ("Pruning / Evicting / Sparse",)
    assert "Pruning / Evicting / Sparse" in b.truth.fits["2404.14469"]  # cited there by the list itself
    r2 = _built("r2_zh_newsletters")
    assert len(next(f for f in r2.days[0].files if f.path.startswith("inbox/jay/")).versions) == 11
    unnumbered = r2.truth.files["inbox/jay/2026-08-11-0900-hf-zh-daily.md"]
    assert not unnumbered.ids and any(u.paper == "2501.03262" for u in unnumbered.units)
