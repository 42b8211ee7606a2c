"""The bearer token read from a file (PREDIGEST_TOKEN_FILE, a compose secret), as the compose stack runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from streams.errors import ConfigError
from streams.settings import Settings, load_settings
from streams.web_guard import authorised, exposure_warning
from streams.worker_process import dump_settings, load_dumped_settings

PROJECT = Path(__file__).resolve().parents[2]
TOKEN = "file-token-3c9d"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "predigest_token"
    path.write_text(TOKEN + "\n", encoding="utf-8")  # `echo … > file` leaves a newline
    return path


def test_the_token_comes_from_the_file_named_by_the_environment(
    monkeypatch: pytest.MonkeyPatch, secret: Path
) -> None:
    monkeypatch.setenv("PREDIGEST_TOKEN_FILE", str(secret))
    monkeypatch.setenv("PREDIGEST_WEB_HOST", "0.0.0.0")
    s = load_settings()
    assert s.token is not None and s.token.get_secret_value() == TOKEN
    assert exposure_warning(s) is None  # a wide bind with a token from a file starts
    assert authorised(s, f"Bearer {TOKEN}") and not authorised(s, "Bearer other")
    assert TOKEN not in repr(s) and TOKEN not in s.model_dump_json()


def test_a_child_worker_gets_the_token_and_not_the_path(tmp_path: Path, secret: Path) -> None:
    s = Settings(state_dir=tmp_path / "state", token_file=secret)
    child = load_dumped_settings(dump_settings(s, tmp_path / "worker-settings.json"))
    assert child.token is not None and child.token.get_secret_value() == TOKEN
    assert child.token_file is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read (No such file or directory): point it at the token's file"),
        ("  \n", "is empty: write the token into it"),
        (b"\xff\xfe", "cannot be read (not UTF-8 text)"),
    ],
)
def test_a_missing_empty_or_binary_token_file_is_refused(
    tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "predigest_token"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(
        ValidationError, match=f"token_file {path} {message}".replace("(", r"\(").replace(")", r"\)")
    ):
        Settings(token_file=path)


def test_a_token_and_a_token_file_together_are_refused(monkeypatch: pytest.MonkeyPatch, secret: Path) -> None:
    monkeypatch.setenv("PREDIGEST_TOKEN", "other")
    monkeypatch.setenv("PREDIGEST_TOKEN_FILE", str(secret))
    with pytest.raises(ConfigError, match="token and token_file are both set"):
        load_settings()


def test_the_worker_names_the_missing_secret_in_one_line_and_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "run" / "secrets" / "predigest_token"
    env = {
        "PATH": "/usr/bin:/bin",
        "PREDIGEST_KAFKA__BOOTSTRAP": "127.0.0.1:9",  # never contacted
        "PREDIGEST_WEB_HOST": "0.0.0.0",
        "PREDIGEST_TOKEN_FILE": str(missing),
    }
    cmd = [sys.executable, "-m", "streams.cli", "worker"]
    done = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert f"token_file {missing} cannot be read (No such file or directory)" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
