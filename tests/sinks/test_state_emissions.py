"""The emissions table: recorded once, read back byte for byte, delivery noted, restored ones delivered."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from processors.models import Briefing
from sinks.state import StateStore
from tests.processors.notes import brief, example_documents
from tests.state_support import SH, as_previous_version, empty_briefing

END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)


def briefing(generated_at: datetime = END) -> Briefing:
    return empty_briefing(END, generated_at)


def test_an_emission_is_recorded_once_and_read_back_as_recorded(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    first = briefing()
    assert state.record_emission(first, "base", "# md\n", emitted_at=END) is True
    assert state.record_emission(briefing(END + timedelta(hours=1)), "base", "# other\n", END) is False
    record = state.emission_record("inference", END, "close")
    assert record is not None
    assert record.briefing_json == first.model_dump_json(by_alias=True).encode()
    assert (record.basename, record.markdown, record.delivered) == ("base", b"# md\n", False)
    state.mark_delivered("inference", END, "close", END + timedelta(minutes=1))
    state.mark_delivered("inference", END, "close", END + timedelta(minutes=9))  # the first time stays
    record = state.emission_record("inference", END, "close")
    assert record is not None and record.delivered_at == END + timedelta(minutes=1)
    assert state.emission_record("inference", END, "flush") is None
    state.close()


def test_an_emission_restored_from_the_topic_counts_as_delivered(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    assert state.restore_emission(briefing(), "base") is True
    record = state.emission_record("inference", END, "close")
    # Its Markdown is not on the topic: the files are rendered from the JSON; nothing is sent again.
    assert record is not None and record.markdown is None and record.delivered
    assert record.delivered_at == END
    state.close()


def test_earlier_briefings_come_back_without_their_per_source_lists(tmp_path: Path) -> None:
    state = StateStore(tmp_path / "worker.duckdb")
    full = brief(example_documents())
    assert full.sources and full.no_increment_sources and full.discrepancies
    state.record_emission(full, "base", "# md\n", emitted_at=END)
    (earlier,) = state.earlier_briefings("inference", END + timedelta(days=1))
    # What later briefings continue from is whole: ids, titles, D numbers; the sources are left in DuckDB.
    assert earlier == full.model_copy(update={"sources": [], "no_increment_sources": [], "rejected": []})
    state.close()


def test_emissions_recorded_by_the_previous_version_read_as_they_were_recorded(tmp_path: Path) -> None:
    """A worker upgraded in place restarts on a file whose briefings are whole in the emissions row."""
    state = StateStore(tmp_path / "worker.duckdb")
    full = brief(example_documents())
    state.record_emission(full, "old", "# old\n", emitted_at=END)
    as_previous_version(state)
    state.close()

    state = StateStore(tmp_path / "worker.duckdb")  # the old row stays as it was
    later = END + timedelta(days=1)
    state.record_emission(briefing_at(later), "new", "# new\n", emitted_at=later)
    record = state.emission_record("inference", END, "close")
    assert record is not None
    assert (record.briefing_json, record.markdown) == (
        full.model_dump_json(by_alias=True).encode(),
        b"# old\n",
    )
    assert state.undelivered_emissions() == [("inference", END, "close"), ("inference", later, "close")]
    assert [e.sources for e in state.emissions.entries()] == [len(full.sources), 0]
    assert state.emissions.by_basename("inference", "old") == full
    (earlier,) = state.earlier_briefings("inference", later)
    assert earlier == full.model_copy(update={"sources": [], "no_increment_sources": [], "rejected": []})
    assert state.latest_emission("inference") == briefing_at(later)
    state.close()


def briefing_at(end: datetime) -> Briefing:
    return empty_briefing(end, end)
