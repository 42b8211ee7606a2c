"""The project sets the topics: co-partitioned documents and control, retention that covers a rebuild."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from pydantic import ValidationError

from streams import kafka_io
from streams.errors import ConfigError
from streams.settings import KafkaSettings, Settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def test_topics_are_created_with_the_projects_retention(make_settings: Callable[..., Settings]) -> None:
    s = make_settings()
    s = s.model_copy(update={"kafka": s.kafka.model_copy(update={"partitions": 3})})
    await kafka_io.ensure_topics(s)
    assert await kafka_io.check_topics(s) == 3
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(s))
    await admin.start()
    try:
        names = [s.kafka.topic(stage) for stage in ("documents", "briefings")]
        assert await kafka_io._retentions(admin, names) == {names[0]: 168 * 3_600_000, names[1]: -1}
    finally:
        await admin.close()


async def test_documents_and_control_of_different_counts_are_refused(
    make_settings: Callable[..., Settings],
) -> None:
    s = make_settings()
    admin = AIOKafkaAdminClient(**kafka_io.client_kwargs(s))
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(s.kafka.topic("documents"), num_partitions=4, replication_factor=1),
                NewTopic(s.kafka.topic("control"), num_partitions=2, replication_factor=1),
            ]
        )
    finally:
        await admin.close()
    await kafka_io.ensure_topics(s)  # creates only the missing ones
    with pytest.raises(ConfigError, match="must have the same count"):
        await kafka_io.check_topics(s)


def test_a_retention_shorter_than_window_grace_and_margin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="shorter than window"):
        Settings(root=tmp_path, kafka=KafkaSettings(retention_hours=36))
    assert Settings(root=tmp_path, kafka=KafkaSettings(retention_hours=49)).retention_floor_ms == (
        (48 * 3600 + 300) * 1000
    )
