"""Kafka security settings reach every client (Faust too), half-configurations are refused, secrets stay hidden."""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import faust
import pytest
from pydantic import SecretStr, ValidationError

from streams.app import create_app
from streams.errors import ConfigError
from streams.kafka_io import MAX_MESSAGE_BYTES, client_kwargs, faust_broker_kwargs, make_producer
from streams.settings import KafkaSettings, Settings, load_settings
from streams.web_guard import authorised, exposure_warning
from streams.worker_process import dump_settings

PROJECT = Path(__file__).resolve().parents[2]
PASSWORD = "kafka-pw-5f1c"
TOKEN = "web-token-9a7e"


def secure(tmp_path: Path, **kafka: Any) -> Settings:
    values: dict[str, Any] = {
        "bootstrap": "k1:9093,k2:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "predigest",
        "sasl_password": SecretStr(PASSWORD),
    }
    values.update(kafka)
    return Settings(state_dir=tmp_path / "state", kafka=KafkaSettings(**values), token=SecretStr(TOKEN))


def test_secrets_never_show_in_repr_str_or_dumps(tmp_path: Path) -> None:
    s = secure(tmp_path)
    for text in (repr(s), str(s), repr(s.kafka), s.model_dump_json(), json.dumps(s.model_dump(mode="json"))):
        assert PASSWORD not in text and TOKEN not in text
    assert "**********" in repr(s)


def test_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PREDIGEST_TOKEN", TOKEN)
    monkeypatch.setenv("PREDIGEST_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("PREDIGEST_KAFKA__SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("PREDIGEST_KAFKA__SASL_USERNAME", "predigest")
    monkeypatch.setenv("PREDIGEST_KAFKA__SASL_PASSWORD", PASSWORD)
    s = load_settings()
    assert s.token is not None and s.token.get_secret_value() == TOKEN
    assert s.kafka.sasl_password is not None and s.kafka.sasl_password.get_secret_value() == PASSWORD


@pytest.mark.parametrize(
    "env",
    [
        {"PREDIGEST_KAFKA__SECURITY_PROTOCOL": "SASL_SSL"},  # no mechanism: refused
        {"PREDIGEST_KAFKA__PARTITIONS": "many"},
        {"PREDIGEST_WEB_PORT": "web"},
    ],
)
def test_a_configuration_error_does_not_echo_the_secrets(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    monkeypatch.setenv("PREDIGEST_TOKEN", "tk")
    monkeypatch.setenv("PREDIGEST_KAFKA__SASL_PASSWORD", "pw")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert "'pw'" not in str(error.value) and "'tk'" not in str(error.value)


def test_the_child_process_settings_file_is_private(tmp_path: Path) -> None:
    path = dump_settings(secure(tmp_path), tmp_path / "worker-settings.json")
    assert path.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("kafka", "message"),
    [
        ({"sasl_password": None}, "needs kafka.sasl_mechanism"),
        ({"security_protocol": "PLAINTEXT"}, "kafka.sasl_mechanism is set"),
        ({"sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
        (
            {"security_protocol": "PLAINTEXT", "sasl_mechanism": None, "ssl_cafile": Path("/ca.pem")},
            r"ssl_\* files are set",
        ),
        ({"ssl_certfile": Path("/client.pem")}, "go together"),
    ],
)
def test_a_half_configured_security_is_refused(tmp_path: Path, kafka: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        secure(tmp_path, **kafka)


def test_every_aiokafka_client_gets_sasl_and_tls(tmp_path: Path) -> None:
    kwargs = client_kwargs(secure(tmp_path))
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert (kwargs["sasl_mechanism"], kwargs["sasl_plain_username"]) == ("SCRAM-SHA-512", "predigest")
    assert kwargs["sasl_plain_password"] == PASSWORD
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    assert kwargs["ssl_context"].verify_mode == ssl.CERT_REQUIRED and kwargs["ssl_context"].check_hostname


def test_the_faust_app_gets_the_same_security_and_every_bootstrap_server(tmp_path: Path) -> None:
    app = create_app(secure(tmp_path))
    creds = app.conf.broker_credentials
    assert isinstance(creds, faust.SASLCredentials)
    assert (creds.protocol.value, creds.mechanism.value) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (creds.username, creds.password) == ("predigest", PASSWORD)
    assert isinstance(creds.ssl_context, ssl.SSLContext)
    assert PASSWORD not in repr(creds)
    assert [str(u) for u in app.conf.broker] == ["kafka://k1:9093", "kafka://k2:9093"]
    tls_only = faust_broker_kwargs(
        secure(tmp_path, security_protocol="SSL", sasl_mechanism=None, sasl_username=None, sasl_password=None)
    )
    assert isinstance(tls_only["broker_credentials"], faust.SSLCredentials)
    plain = faust_broker_kwargs(Settings(kafka=KafkaSettings(bootstrap="127.0.0.1:9092")))
    assert plain == {"broker": ["kafka://127.0.0.1:9092"]}


async def test_producers_are_idempotent_with_acks_all_and_large_messages(tmp_path: Path) -> None:
    # aiokafka's defaults (acks=1, no idempotence, 1 MiB) lose and refuse data (DESIGN §6).
    producer = make_producer(Settings(kafka=KafkaSettings(bootstrap="127.0.0.1:9")))
    try:
        assert producer._txn_manager is not None  # idempotence: a producer id and sequence numbers
        assert producer._sender._acks == -1
        assert producer._max_request_size == MAX_MESSAGE_BYTES
    finally:
        await producer.stop()
    app = create_app(Settings(state_dir=tmp_path, kafka=KafkaSettings(bootstrap="127.0.0.1:9")))
    assert (app.conf.producer_acks, app.conf.producer_max_request_size) == (-1, MAX_MESSAGE_BYTES)
    # Fetches stay small (the worker's memory with a backlog); a larger record still comes whole, which
    # test_bad_input_integration proves with a note just under the 4 MiB limit.
    assert app.conf.consumer_max_fetch_size == 1024 * 1024


def test_the_web_server_binds_loopback_unless_configured(tmp_path: Path) -> None:
    default = create_app(Settings(state_dir=tmp_path, kafka=KafkaSettings(bootstrap="127.0.0.1:9092")))
    assert (default.conf.web_bind, default.conf.web_host) == ("127.0.0.1", "127.0.0.1")
    assert not default.conf.web_tables_enabled and not default.conf.web_router_enabled
    wide = create_app(
        Settings(
            state_dir=tmp_path,
            web_host="0.0.0.0",
            token=SecretStr(TOKEN),
            kafka=KafkaSettings(bootstrap="127.0.0.1:9092"),
        )
    )
    assert wide.conf.web_bind == "0.0.0.0"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "notes.example"])
def test_a_web_port_others_can_reach_without_a_token_is_refused_at_start(tmp_path: Path, host: str) -> None:
    s = Settings(state_dir=tmp_path, web_host=host, kafka=KafkaSettings(bootstrap="127.0.0.1:9092"))
    with pytest.raises(ConfigError, match="no token is set: set PREDIGEST_TOKEN") as refused:
        create_app(s)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_needs_no_token(tmp_path: Path, host: str) -> None:
    assert exposure_warning(Settings(state_dir=tmp_path, web_host=host)) is None


def test_the_opt_out_starts_with_a_loud_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    s = Settings(
        state_dir=tmp_path,
        web_host="0.0.0.0",
        web_allow_no_token=True,
        kafka=KafkaSettings(bootstrap="127.0.0.1:9092"),
    )
    with caplog.at_level(logging.WARNING):
        create_app(s)
    assert "WARNING: web_host 0.0.0.0 without a token" in caplog.text
    assert "anyone who can reach port 6066 can flush every axis" in caplog.text


@pytest.mark.parametrize("token", ["", "   "])
def test_an_empty_token_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    monkeypatch.setenv("PREDIGEST_TOKEN", token)
    with pytest.raises(ConfigError, match="token is empty"):
        load_settings()


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({"PREDIGEST_WEB_HOST": "0.0.0.0"}, "no token is set: set PREDIGEST_TOKEN"),
        ({"PREDIGEST_TOKEN": ""}, "configuration error: token is empty"),
    ],
)
def test_the_worker_refuses_an_insecure_start_with_one_line_and_exit_2(
    tmp_path: Path, env: dict[str, str], line: str
) -> None:
    env = {"PATH": "/usr/bin:/bin", "PREDIGEST_KAFKA__BOOTSTRAP": "127.0.0.1:9", **env}  # never contacted
    cmd = [sys.executable, "-m", "streams.cli", "worker"]
    done = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert line in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (None, False),
        ("", False),
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),  # the scheme is case-insensitive
        (f"Bearer {TOKEN}x", False),
        ("Bearer wrong", False),
        (f"Basic {TOKEN}", False),
        (f"Token {TOKEN}", False),
        (TOKEN, False),
        ("Bearer", False),
    ],
)
def test_the_bearer_token_check(tmp_path: Path, header: str | None, ok: bool) -> None:
    assert authorised(secure(tmp_path), header) is ok
    assert authorised(Settings(), header) is True  # no token configured: open (loopback only)
