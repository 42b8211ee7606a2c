"""The briefing browser in a real headless Chromium (Debian's, `make tools`): a worker briefs the example root plus
a hostile note twice; the index, both briefings and the notes load, every link resolves, and the hostile title
and file name stay text (no script runs, no element is built from them)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Callable
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo

import httpx
import pytest

from streams import kafka_io
from streams.control import await_briefing, send_command
from streams.oneshot import wait_ingested
from streams.settings import Settings
from streams.watcher import publish_root
from tests.support import running_worker, worker_url

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXAMPLE_ROOT = Path(__file__).resolve().parents[2] / "examples" / "root"
SH = ZoneInfo("Asia/Shanghai")
END = datetime(2026, 9, 27, 22, 20, tzinfo=SH)
# A script that would add the word PWNED to the page if it ran; an image whose error handler would.
MARKUP = (
    '<script>document.body.append("PW"+"NED")</script><img src=x onerror="document.title=\'PW\'+\'NED\'">'
)
HOSTILE_PATH = f"inbox/jay/2026-09-27-2100-{MARKUP.replace('/', '_')}.md"
HOSTILE_NOTE = (
    f"# `{MARKUP}` KV cache\n\nvLLM serving KV cache arXiv:2609.23130 throughput 3.8× `{MARKUP}`\n\n"
    "[click](javascript:document.body.append('PW'+'NED'))\n"
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is missing: run `make tools` (deploy/ensure-deb.sh chromium chromium)")
    return found


def dom(url: str, profile: Path) -> str:
    """The page as Chromium built it, after its load event and any script that ran."""
    result = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",  # tests run as root in CI containers
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=2000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


class Page(HTMLParser):
    """The elements of a built page: tags, links, ids, event-handler attributes, text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str]] = []  # (class, href)
        self.ids: set[str] = set()
        self.handlers: list[str] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.links.append((a.get("class", ""), a["href"]))
        if "id" in a:
            self.ids.add(a["id"])
        self.handlers += [k for k in a if k.startswith("on")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def inert(page: Page, raw: str) -> None:
    """Nothing of the hostile markup became an element or ran."""
    assert "PWNED" not in raw
    assert "script" not in page.tags and "img" not in page.tags and not page.handlers
    assert all(not href.lower().startswith("javascript:") for _, href in page.links)


async def _brief(s: Settings) -> None:
    shutil.copytree(EXAMPLE_ROOT, s.root, dirs_exist_ok=True)
    (s.root / HOSTILE_PATH).write_text(HOSTILE_NOTE, encoding="utf-8")
    await kafka_io.ensure_topics(s)
    await publish_root(s, follow=False, stop=asyncio.Event())


async def test_the_browser_pages_load_links_resolve_and_hostile_text_stays_inert(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    chromium()
    s = make_settings(status_refresh_seconds=0.5, lang="en")
    await _brief(s)
    profile = tmp_path / "chromium-profile"
    with running_worker(s, tmp_path, "worker"):
        await wait_ingested(s, 90)
        await send_command(s, "inference", "flush", END)
        await await_briefing(s, "inference", END, "flush", 90)
        await send_command(s, "inference", "close", END)
        await await_briefing(s, "inference", END, "close", 90)
        await asyncio.sleep(1.0)  # past the page cache of status_refresh_seconds

        base = worker_url(s, "")
        index_raw = await asyncio.to_thread(dom, base + "/browse", profile)
        index = Page(index_raw)
        briefings = [href for cls, href in index.links if cls == "briefing"]
        assert len(briefings) == 2 and all(h.startswith("/browse/inference/") for h in briefings)
        assert "2026-09-27" in "".join(index.text)

        # The close came after the flush of the same window: its page says what changed since the flush.
        later_raw = await asyncio.to_thread(dom, base + briefings[-1], profile)
        later = Page(later_raw)
        inert(later, later_raw)
        assert [h for c, h in later.links if c == "previous"] == [briefings[0]]
        text = "".join(later.text)
        assert "<script>" in text  # the hostile title is shown as the note wrote it, as text
        notes = {h for c, h in later.links if c == "note"}
        sections = {h for c, h in later.links if c == "section"}
        assert sections, "increments link to the living document's sections"

        async with httpx.AsyncClient(timeout=20) as http:
            for _, href in {*index.links, *later.links}:
                if href.startswith("/"):
                    answer = await http.get(base + href)
                    assert answer.status_code == 200, href
                    assert "default-src 'none'" in answer.headers["Content-Security-Policy"]
                    fragment = unquote(urlsplit(href).fragment)
                    # A `path#section` source lands on that section of the note.
                    assert not fragment or fragment in Page(answer.text).ids, href
            assert (await http.get(base + "/browse/inference/nope")).status_code == 404
            assert (await http.get(base + "/browse/nope/x")).status_code == 404

        hostile = next(h for h in notes if "2100" in h)
        assert parse_qs(urlsplit(hostile).query)["path"] == [HOSTILE_PATH]
        note_raw = await asyncio.to_thread(dom, base + hostile, profile)
        inert(Page(note_raw), note_raw)

        # Each section link lands on an element of the living document's page, as Chromium built it.
        living = await asyncio.to_thread(dom, base + sorted(sections)[0].split("#")[0], profile)
        assert {unquote(urlsplit(h).fragment) for h in sections} <= Page(living).ids
