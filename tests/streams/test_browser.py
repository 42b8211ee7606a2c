"""The browser's reads of a real state: the index and a briefing page with its previous one and D-item history,
a note, 404s, and pages kept for `status_refresh_seconds` (readers cannot make the worker read more often); a
path refused and never stored, and a briefing's rejected files, answered by the worker's web server."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from processors.browse import note_url
from processors.models import Briefing, RawFile
from processors.window import window_bounds
from processors.wire import DocumentRecord, EventHeader
from sinks.metrics import Metrics
from sinks.state import StateStore
from streams.app import create_app
from streams.browser import Browser
from streams.pipeline import route_params
from streams.services import LazyPipeline
from streams.settings import KafkaSettings, Settings
from tests.clocks import START, ManualClock
from tests.processors.notes import END, brief, example_documents, living
from tests.state_support import parsed, put_document, raw_file, route_into
from tests.streams.agent_support import in_process_settings

WINDOW = window_bounds(END, timedelta(hours=24))  # the window of `brief`'s briefings


def _setup(tmp_path: Path) -> tuple[Browser, LazyPipeline, ManualClock]:
    s = Settings(
        root=tmp_path / "root",
        state_dir=tmp_path / "state",
        kafka=KafkaSettings(bootstrap="127.0.0.1:9"),
        status_refresh_seconds=5.0,
        lang="en",
    )
    clock = ManualClock()
    pipeline = LazyPipeline(s, Metrics(), clock)
    return Browser(s, pipeline, clock), pipeline, clock


def _record(pipeline: LazyPipeline, b: Briefing, name: str, minutes: int) -> None:
    state = pipeline().state
    state.record_emission(b, name, "# md\n", emitted_at=b.window.end + timedelta(minutes=minutes))


async def test_pages_of_a_real_state_and_their_cache(tmp_path: Path) -> None:
    browser, pipeline, clock = _setup(tmp_path)
    assert "no briefing yet" in (await browser.index()).html
    flush = brief(example_documents(), living_doc=living(), lang="en", trigger="flush")
    close = brief(example_documents(), living_doc=living(), lang="en", trigger="close")
    _record(pipeline, flush, "0927-2220-flush", 0)
    _record(pipeline, close, "0927-2220-close", 5)
    assert "no briefing yet" in (await browser.index()).html  # the page read a moment ago is kept
    clock.advance(6)
    index = (await browser.index()).html
    assert "/browse/inference/0927-2220-flush" in index and "/browse/inference/0927-2220-close" in index

    page = await browser.briefing("inference", "0927-2220-close")
    assert page.status == 200 and 'class="previous" href="/browse/inference/0927-2220-flush"' in page.html
    for d in close.discrepancies:  # each D-item lists both briefings: the flush first
        assert page.html.index(f'id="{d.id}"') < page.html.index(
            "0927-2220-flush", page.html.index(f'id="{d.id}"')
        )
    first = await browser.briefing("inference", "0927-2220-flush")
    assert "first briefing" in first.html and 'class="previous"' not in first.html

    assert (await browser.briefing("inference", "nope")).status == 404
    assert (await browser.briefing("not-an-axis", "0927-2220-close")).status == 404
    assert (await browser.note("inbox/jay/never.md")).status == 404
    path = "inbox/jay/2026-09-27-0900-a.md"
    put_document(pipeline().state, "inference", parsed(path, "# A note\n\n## §1 One\n\ntext\n"), raw_offset=1)
    note = await browser.note(path)
    assert note.status == 200 and 'id="sec-1"' in note.html and 'class="refused"' not in note.html
    # Its file replaced by a symlink since: the page says the version is no longer briefed, and why.
    refusal = EventHeader(
        type="rejection", path=path, sha256="refused-symlink", seen_at=END, axis="inference", raw_offset=2,
        reason="it is a symlink (never followed)", reason_code="symlink",
    )  # fmt: skip
    pipeline().state.apply_batch([(DocumentRecord(refusal), None)])
    clock.advance(6)
    note = await browser.note(path)
    assert note.status == 200 and 'id="sec-1"' in note.html
    assert "refused at the door since this version was stored" in note.html
    assert "it is a symlink (never followed)" in note.html
    pipeline.opened.state.close()  # type: ignore[union-attr]


async def test_a_path_refused_and_never_stored_has_a_page_saying_why_and_when_not_404(tmp_path: Path) -> None:
    s = in_process_settings(tmp_path, lang="en")
    link, blob = "inbox/jay/2026-09-27-0900-link.md", "inbox/jay/2026-09-27-1000-<b>blob</b>.md"
    s.state_dir.mkdir(parents=True)
    state = StateStore(s.state_file)  # the worker's own state file, written as its window agent writes it
    symlink = RawFile(
        path=link, content=b"", size=9, mtime=0.0, sha256="refused-symlink",
        refused="it is a symlink (never followed)", refused_code="symlink",
    )  # fmt: skip
    route_into(state, symlink, route_params(s), START, 1)
    route_into(state, raw_file(blob, b"\x00\x01binary"), route_params(s), START + timedelta(minutes=5), 2)
    state.close()
    app = create_app(s, ManualClock())
    async with TestClient(TestServer(app.web.web_app)) as http:  # type: ignore[attr-defined]  # aiohttp driver
        page = await http.get("/browse/note", params={"path": link})
        html = await page.text()
        assert page.status == 200 and "refused at the door, no version of it stored" in html
        # Why, in the page's language and as the watcher said it, and when the worker saw it (in `zone`).
        assert "a symlink: it is a symlink (never followed) · refused 2026-09-27 22:30" in html
        assert f"{link}: it is" not in html  # the path is the page's title, not repeated in the reason
        binary = await http.get("/browse/note", params={"path": blob})
        assert binary.status == 200 and "binary file (NUL bytes)" in await binary.text()
        assert "<b>blob</b>" not in await binary.text()  # the name escaped like any document text
        assert (await http.get("/browse/note", params={"path": "inbox/jay/never.md"})).status == 404
    assert app.closing is not None
    await app.closing()  # closes the state the requests opened


async def test_a_briefing_page_lists_its_rejected_files_linked_with_why_in_its_language(
    tmp_path: Path,
) -> None:
    s = in_process_settings(tmp_path, lang="zh")
    link, blob = "inbox/jay/2026-09-27-0900-link.md", "inbox/jay/2026-09-27-1000-<b>blob</b>.md"
    s.state_dir.mkdir(parents=True)
    state = StateStore(s.state_file)
    symlink = RawFile(
        path=link, content=b"", size=9, mtime=0.0, sha256="refused-symlink",
        refused="it is a symlink (never followed)", refused_code="symlink",
    )  # fmt: skip
    route_into(state, symlink, route_params(s), END - timedelta(hours=2), 1)
    binary = raw_file(blob, b"\x00\x01binary", mtime=(END - timedelta(hours=1)).timestamp())
    route_into(state, binary, route_params(s), END - timedelta(hours=1), 2)
    b = brief(
        example_documents(), living_doc=living(), lang="zh", rejected=state.rejections(WINDOW, "inference")
    )
    state.record_emission(b, "0927-2220-close", "# md\n", emitted_at=END)
    state.close()
    app = create_app(s, ManualClock())
    async with TestClient(TestServer(app.web.web_app)) as http:  # type: ignore[attr-defined]  # aiohttp driver
        page = await http.get("/browse/inference/0927-2220-close")
        html = await page.text()
        assert page.status == 200 and '<h2 id="rejected">拒收</h2>' in html
        rows = html[
            html.index('id="rejected-table"') : html.index("</table>", html.index('id="rejected-table"'))
        ]
        # Each refused file linked to its note page, why in the page's language, the reason without its path.
        assert f'<a class="note" href="{note_url(link)}">{link}</a></td><td>符号链接</td>' in rows
        assert "<td>it is a symlink (never followed)</td>" in rows
        assert (
            "<td>二进制文件（含 NUL 字节）</td><td>file contains NUL bytes; binary files are not notes</td>"
            in rows
        )
        assert "<b>blob</b>" not in html and "&lt;b&gt;blob&lt;/b&gt;" in rows  # the name escaped
        for path in (link, blob):  # each link opens the file's own page, which says why
            note = await http.get("/browse/note", params={"path": path})
            assert note.status == 200 and "在入口被拒收" in await note.text()
    assert app.closing is not None
    await app.closing()
