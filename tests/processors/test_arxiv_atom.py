"""parse_feed on the real recorded arXiv API responses, and on bodies that are not Atom."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from processors.arxiv_atom import ArxivAtomError, ArxivRecord, parse_feed
from processors.errors import ProcessorError

FIXTURES = Path(__file__).resolve().parents[1] / "corpus/arxiv_api/lukasschwab_arxiv.py_fixtures"
XML = FIXTURES / "xml_extracted"


def records_of(body: bytes) -> list[ArxivRecord]:
    """The papers of a response; an error feed or an empty feed gives []."""
    return list(parse_feed(body).records)


def body(name: str) -> bytes:
    return next(XML.glob(f"{name}_s0_m100_*.xml")).read_bytes()


def page(start: int, size: int) -> list[str]:
    return [r.id for r in records_of(next(XML.glob(f"q_testing_s{start}_m{size}_*.xml")).read_bytes())]


def test_every_recorded_response_parses() -> None:
    files = sorted(XML.glob("*.xml"))
    assert len(files) == 20
    for path in files:
        for record in records_of(path.read_bytes()):
            assert record.title and "\n" not in record.title and "  " not in record.title, path.name
            assert "v" not in record.id.rsplit("/", 1)[-1], path.name  # ids carry no version


def test_single_id() -> None:
    (record,) = records_of(body("id_1605.08386"))
    assert record == ArxivRecord(
        id="1605.08386",
        version=1,
        title="Heat-bath random walks with Markov bases",
        published="2016-05-26",
        updated="2016-05-26",
        primary_category="math.CO",
        categories=("math.CO", "math.ST"),
        authors=("Caprice Stanley", "Tobias Windisch"),
        summary=record.summary,
    )
    assert record.summary.startswith("Graphs on lattice points are studied")


def test_versioned_id_and_a_title_that_looks_falsy() -> None:
    (record,) = records_of(body("id_2104.12255v1"))
    assert (record.id, record.version, record.title) == ("2104.12255", 1, "0")
    assert record.primary_category == "cs.CR"


@pytest.mark.parametrize(
    ("name", "arxiv_id", "primary"),
    [
        ("id_astro-ph_0601001", "astro-ph/0601001", "astro-ph"),
        ("id_quant-ph_0201082v1", "quant-ph/0201082", "quant-ph"),
    ],
)
def test_old_style_ids(name: str, arxiv_id: str, primary: str) -> None:
    (record,) = records_of(body(name))
    assert record.id == arxiv_id
    assert record.version == 1
    assert record.primary_category == primary
    assert record.summary.startswith("We ")  # leading whitespace of the abstract is gone


def test_two_ids_in_one_request_where_one_does_not_exist() -> None:
    records = records_of(body("id_0808.05394_1707.08567"))
    assert [r.id for r in records] == ["1707.08567"]
    assert len(records[0].authors) == 34
    assert "Dirk Wübben" in records[0].authors


def test_nonexistent_id_is_an_empty_feed_not_an_error() -> None:
    feed = parse_feed(body("id_0000.0000"))
    assert feed.records == () and feed.errors == () and feed.total_results == 0


def test_malformed_id_error_feed_gives_no_record_and_the_message() -> None:
    feed = parse_feed(body("id_abc"))
    assert feed.records == ()
    assert feed.errors == ("incorrect id format for abc",)
    assert records_of(body("id_abc")) == []


def test_search_pages_stitch_together() -> None:
    everything = page(0, 100)
    assert len(set(everything)) == 100
    assert [i for start in range(0, 60, 10) for i in page(start, 10)] == everything[:60]
    assert page(5, 15) == everything[5:20]
    assert page(9, 15) == everything[9:24]
    assert "cs/0503050" in everything  # an old-style id among the new


def test_json_recordings_agree_with_the_xml_and_status() -> None:
    for path in sorted((FIXTURES / "json").glob("*.json")):
        recorded = json.loads(path.read_text(encoding="utf-8"))
        # The recorder decoded the UTF-8 bytes as Latin-1 ("Dirk WÃ¼bben"); undoing that gives the bytes.
        raw = recorded["body"].encode("latin-1")
        assert raw == (XML / path.with_suffix(".xml").name).read_bytes(), path.name
        assert (recorded["status_code"] == 400) == bool(parse_feed(raw).errors), path.name


def test_whitespace_in_titles_is_collapsed() -> None:
    text = body("id_1605.08386").replace(b"Heat-bath random walks", b"Heat-bath\n      random   walks")
    assert records_of(text)[0].title == "Heat-bath random walks with Markov bases"


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&lol2;</title></feed>"""


@pytest.mark.parametrize(
    "bad",
    [
        b"<html><body><h1>503 Service Unavailable</h1></body></html>",
        b"",
        body("id_1605.08386")[:400],  # cut off mid-stream
        b'<rss version="2.0"><channel/></rss>',
        BILLION_LAUGHS,
        b'<?xml version="1.0"?><!DOCTYPE f SYSTEM "file:///etc/passwd"><feed xmlns="http://www.w3.org/2005/Atom"/>',
    ],
)
def test_a_body_that_is_not_atom_is_a_processor_error(bad: bytes) -> None:
    with pytest.raises(ArxivAtomError) as info:
        records_of(bad)
    assert isinstance(info.value, ProcessorError)


def test_an_entry_without_an_abstract_id_is_reported_not_invented() -> None:
    text = body("id_1605.08386").replace(b"http://arxiv.org/abs/1605.08386v1</id>", b"urn:x</id>")
    feed = parse_feed(text)
    assert feed.records == ()
    assert feed.errors == ("entry without an abstract id or a title: urn:x",)
