"""The bare-Kafka baseline `make bench` divides by: its producer runs with the backfill's settings."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.archive import generate
from bench.baseline import produce
from streams import kafka_io
from streams.settings import Settings
from tests.support import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_the_baseline_sends_every_file_with_the_backfills_producer_settings(
    make_settings: Callable[..., Settings], kafka_bootstrap: str
) -> None:
    settings = make_settings()
    files = generate(settings.root, 10).files
    await kafka_io.ensure_topics(settings)
    # The backfill's default compression is "none", which aiokafka refuses unless it is given as None.
    sent = await produce(kafka_bootstrap, settings.kafka.topic("raw"), settings.root)
    assert sent == files == len(await read_topic(settings, "raw"))
