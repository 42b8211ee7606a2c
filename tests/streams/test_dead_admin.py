"""`predigest dead list`'s preview of a letter's value."""

from __future__ import annotations

import argparse
import re

import pytest

from processors.models import RawFile
from processors.raw_record import raw_record
from streams.dead_admin import preview, run
from streams.dead_args import add_parser
from streams.errors import StreamsError
from streams.settings import Settings


def test_a_v2_raw_letter_is_previewed_from_its_header_not_its_magic_and_lengths() -> None:
    raw = RawFile(path="inbox/jay/a.md", content=b"# A note", size=8, mtime=1.0, sha256="ab")
    shown = preview(raw_record(raw))
    assert shown.startswith('{"path":"inbox/jay/a.md"')
    assert "PR2" not in shown  # the header first: the path is what the operator looks for


def test_other_values_are_previewed_as_they_are() -> None:
    assert preview(b"not a raw file\x01") == "not a raw file·"
    assert preview(None) == "(no value)"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--ids", "x"], "--ids 'x' is not PARTITION:OFFSET"),
        ([], "say which dead letters to replay"),
    ],
)
def test_a_replay_s_bad_arguments_are_refused_before_a_broker_is_found(argv: list[str], said: str) -> None:
    # Without a bootstrap, finding the broker starts a local one: a typo must not cost a broker's start.
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dead", "replay", *argv])
    found: list[Settings] = []

    def resolve(settings: Settings) -> Settings:
        found.append(settings)
        return settings

    with pytest.raises(StreamsError, match=re.escape(said)):
        run(args, Settings(), resolve)
    assert found == []
