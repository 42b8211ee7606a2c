"""The admin surface of a real worker: loopback only, the bearer token on POST /flush, read-only views, no secrets
in logs; and a failed SASL handshake against the real broker logs no password."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from pydantic import SecretStr

from streams import kafka_io
from streams.settings import KafkaSettings, Settings
from tests.streams.fault_support import committed, metric, worker_metrics
from tests.support import read_topic, running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOKEN = "tok-3c9d1e"
PASSWORD = "sasl-pw-77a1b2"


def listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket LISTENs on for `port`, from /proc/net/tcp{,6}."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


async def test_the_worker_admin_surface_is_locked_down(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings(token=SecretStr(TOKEN))
    s = s.model_copy(update={"kafka": s.kafka.model_copy(update={"sasl_password": SecretStr(PASSWORD)})})
    await kafka_io.ensure_topics(s)
    with running_worker(s, tmp_path):
        assert listening_addresses(s.web_port) == {"0100007F"}  # 127.0.0.1, and nothing else
        url = worker_url(s, "/flush")
        params = {"axis": "inference", "end": "2026-09-27T22:20:00+08:00"}
        async with httpx.AsyncClient(timeout=10, headers={"X-Predigest-Request": "1"}) as http:
            for header in (
                None,
                "Bearer wrong",
                f"Bearer {TOKEN}x",
                f"Basic {TOKEN}",
                TOKEN,
                f"Token {TOKEN}",
            ):
                refused = await http.post(
                    url, params=params, headers={"Authorization": header} if header else {}
                )
                assert refused.status_code == 401, header
                assert refused.headers["WWW-Authenticate"].startswith("Bearer")
                assert TOKEN not in refused.text
            accepted = await http.post(url, params=params, headers={"Authorization": f"Bearer {TOKEN}"})
            assert accepted.status_code == 202
            for path in ("/metrics", "/healthz", "/briefings/inference/latest"):
                assert (await http.post(worker_url(s, path))).status_code == 405, path
                assert (await http.delete(worker_url(s, path))).status_code == 405, path
            assert (await http.get(url)).status_code == 405  # /flush changes state: POST only
            for path in ("/table/", "/router/"):  # Faust's own views are off
                assert (await http.get(worker_url(s, path))).status_code == 404, path
            assert (await http.get(worker_url(s, "/healthz"))).status_code == 200
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert TOKEN not in log and PASSWORD not in log
    assert (tmp_path / "worker-settings.json").stat().st_mode & 0o077 == 0


async def test_a_failed_sasl_handshake_logs_no_password(
    kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The session broker speaks PLAINTEXT only: a SASL client fails its handshake, and says why, without the secret.
    s = Settings(
        kafka=KafkaSettings(
            bootstrap=kafka_bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_username="predigest",
            sasl_password=SecretStr(PASSWORD),
        )
    )
    caplog.set_level(logging.DEBUG)
    producer = AIOKafkaProducer(**kafka_io.client_kwargs(s), request_timeout_ms=5000)
    with pytest.raises(KafkaError) as failed:
        await producer.start()
    await producer.stop()
    assert caplog.records, "the failure was logged"
    assert PASSWORD not in caplog.text and PASSWORD not in str(failed.value) and PASSWORD not in repr(s)


# What Chromium sends for a page on another site that auto-submits a form, or fetch()es, to the worker.
CROSS_SITE_FORM = {
    "Origin": "http://evil.example",
    "Referer": "http://evil.example/",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "navigate",
    "Content-Type": "application/x-www-form-urlencoded",
}
CROSS_SITE_FETCH = {
    "Origin": "http://evil.example",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "no-cors",
}


async def test_a_web_page_cannot_flush_a_worker_without_a_token(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    s = make_settings()  # no token: the default on loopback
    await kafka_io.ensure_topics(s)
    url = worker_url(s, "/flush")
    params = {"axis": "all", "end": "2026-09-27T22:20:00+08:00"}
    with running_worker(s, tmp_path):
        async with httpx.AsyncClient(timeout=10) as http:
            for headers in (CROSS_SITE_FORM, CROSS_SITE_FETCH, {"Origin": "http://evil.example"}, {}):
                refused = await http.post(url, params=params, headers=headers, content=b"axis=all")
                assert refused.status_code == 403, (headers, refused.text)
                assert "Access-Control-Allow-Origin" not in refused.headers
            # The preflight a cross-site script needs before it may send X-Predigest-Request is never granted.
            preflight = await http.options(
                url,
                headers={
                    "Origin": "http://evil.example",
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "x-predigest-request",
                },
            )
            assert preflight.status_code >= 400 and "Access-Control-Allow-Origin" not in preflight.headers
            counted = {
                r: metric(worker_metrics(s), "predigest_web_requests_refused_total", reason=r)
                for r in ("cross_site", "foreign_origin", "not_a_script")
            }
            assert counted == {"cross_site": 2, "foreign_origin": 1, "not_a_script": 1}
            assert await committed(s, "control") == 0 and await read_topic(s, "control") == []
            # A script (curl, the CLI's users) says what it is, and goes through.
            script = await http.post(url, params=params, headers={"X-Predigest-Request": "1"})
            assert script.status_code == 202, script.text
            assert len(script.json()["queued"]) == len(s.axes)
