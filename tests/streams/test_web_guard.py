"""The cross-site checks of state-changing routes, header by header: what a browser sends for a page on another
site is refused, token or not; a script or the CLI that sends X-Predigest-Request goes through."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from streams.settings import Settings
from streams.web_guard import REQUEST_HEADER, own_origins, post_refusal, read_refusal

SCRIPT = {REQUEST_HEADER: "1"}


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        # An HTML form auto-submitted by a page on another site: a simple request, no custom header.
        ({"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, "cross_site"),
        ({"Origin": "http://127.0.0.1:6066", "Sec-Fetch-Site": "same-site"}, "cross_site"),  # another port
        ({"Origin": "http://evil.example", **SCRIPT}, "foreign_origin"),  # an old browser, no Sec-Fetch-*
        ({"Origin": "null", **SCRIPT}, "foreign_origin"),  # a sandboxed frame or a file:// page
        ({"Origin": "http://127.0.0.1:6067", **SCRIPT}, "foreign_origin"),  # the watcher's port is not ours
        ({}, "not_a_script"),  # a form, an <img>, a no-cors fetch: none can add the header
        ({"Content-Type": "application/x-www-form-urlencoded"}, "not_a_script"),
        ({REQUEST_HEADER: "  "}, "not_a_script"),
    ],
)
def test_what_a_web_page_can_send_is_refused(headers: dict[str, str], reason: str) -> None:
    refused = post_refusal(Settings(), headers)
    assert refused is not None and (refused.reason, refused.status) == (reason, 403)


@pytest.mark.parametrize(
    "headers",
    [
        SCRIPT,  # curl, the tests, any script
        {**SCRIPT, "Sec-Fetch-Site": "none"},  # typed into the address bar (it would be a GET anyway)
        {**SCRIPT, "Origin": "http://127.0.0.1:6066", "Sec-Fetch-Site": "same-origin"},
        {**SCRIPT, "Origin": "http://localhost:6066/"},
        {"x-predigest-request": "yes", "origin": "HTTP://[::1]:6066"},  # header names and origins ignore case
    ],
)
def test_a_script_or_the_servers_own_page_goes_through(headers: dict[str, str]) -> None:
    assert post_refusal(Settings(), headers) is None


def test_the_token_is_checked_after_the_cross_site_checks_and_a_page_is_refused_even_with_it() -> None:
    s = Settings(token=SecretStr("t0ken"))
    with_token = {"Authorization": "Bearer t0ken"}
    assert post_refusal(s, {**SCRIPT, **with_token}) is None
    refused = post_refusal(s, SCRIPT)
    assert refused is not None and (refused.reason, refused.status) == ("token", 401)
    page = post_refusal(s, {**with_token, "Sec-Fetch-Site": "cross-site"})
    assert page is not None and page.reason == "cross_site"


def test_own_origins_follow_the_bind_address_and_web_origins() -> None:
    assert "http://127.0.0.1:6066" in own_origins(Settings())
    wide = own_origins(Settings(web_host="0.0.0.0", web_port=8080, token=SecretStr("t")))
    assert "http://localhost:8080" in wide and "http://0.0.0.0:8080" not in wide
    lan = Settings(web_host="192.0.2.7", token=SecretStr("t"), web_origins=("https://predigest.example/",))
    assert own_origins(lan) == {"http://192.0.2.7:6066", "https://predigest.example"}
    assert (
        post_refusal(lan, {**SCRIPT, "Origin": "https://predigest.example", "Authorization": "Bearer t"})
        is None
    )


def test_reads_need_the_token_only_when_web_read_token_is_set() -> None:
    open_reads = Settings(token=SecretStr("tok"))
    assert read_refusal(open_reads, {}) is None  # the default: status and briefings answer anyone on the port
    closed = Settings(token=SecretStr("tok"), web_read_token=True)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic tok"}):
        refused = read_refusal(closed, headers)
        assert refused is not None and (refused.reason, refused.status) == ("token", 401)
    assert read_refusal(closed, {"authorization": "Bearer tok"}) is None
    with pytest.raises(ValueError, match="web_read_token is set but no token"):
        Settings(web_read_token=True)
