"""The worker's topics as its agents read them: what Faust prefetches for each."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import faust
from faust.types import AgentT, Message

from streams.app import faust_app
from streams.topics import DOCUMENTS_BUFFER_RECORDS, Topics
from tests.clocks import ManualClock
from tests.streams.agent_support import Start, in_process_settings


def _prefetched(agent: AgentT[bytes]) -> int:
    """The most events Faust buffers for the agent's stream."""
    channel = agent.stream().channel
    assert isinstance(channel, faust.Topic)
    return channel.queue.maxsize


async def test_the_window_agent_prefetches_few_documents_records(tmp_path: Path, start: Start) -> None:
    # A documents record holds up to 384 KiB of notes: 1 000 of them prefetched (the app's stream buffer, sized
    # for raw records) allowed ~370 MB in a worker catching up on a documents backlog.
    w = start(in_process_settings(tmp_path, batch_records=500), ManualClock())
    assert _prefetched(w.agents.window) == DOCUMENTS_BUFFER_RECORDS
    assert DOCUMENTS_BUFFER_RECORDS * 384 * 1024 <= 32 * 1024 * 1024
    # Raw records (a note each) keep the app's buffer: two parse batches.
    assert _prefetched(w.agents.parse) == 2 * 500


async def test_each_stage_hands_its_records_bytes_over_as_read(tmp_path: Path) -> None:
    # The agents get each record's key, value and headers as the consumer read them, as Faust's raw codec
    # handed them over; what the worker sends on the topics is encoded as before.
    settings = in_process_settings(tmp_path)
    app = faust_app(settings)
    faust_own = faust.Topic(
        app, topics=["x"], key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )
    topics = Topics.declare(app, settings)
    for topic in [getattr(topics, f.name) for f in fields(topics)]:
        for key, value, headers in [(b"inference", b"\x00{note}\xff", [("replays", b"1")]), (None, None, [])]:
            message = Message(topic.get_topic_name(), 3, 17, 0.0, 0, headers, key, value, None)
            event, expected = await topic.decode(message), await faust_own.decode(message)
            assert type(event) is type(expected)
            assert (event.key, event.value, event.headers, event.message) == (
                key,
                value,
                dict(headers),
                message,
            )
            assert event.value is value  # not copied
        assert topic.prepare_key(b"axis", None) == faust_own.prepare_key(b"axis", None)
        assert topic.prepare_value(b"{}", None) == faust_own.prepare_value(b"{}", None)


async def test_each_topic_the_worker_reads_has_one_reader(tmp_path: Path, start: Start) -> None:
    # With cython_optimizations the conductor decodes a record once for all the channels of its topic with the
    # same types; with one channel a topic, each record is decoded for its agent as before.
    w = start(in_process_settings(tmp_path), ManualClock())
    assert w.app.conf.cython_optimizations
    readers = [name for agent in w.app.agents.values() for name in agent.channel.topics]
    assert len(readers) == len(set(readers)) == 3
    assert not w.app.tables  # a table would read its changelog topic
