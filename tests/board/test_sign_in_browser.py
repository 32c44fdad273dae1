"""Without login, a browser is the operator's only through the URL `paperclip serve` printed.

Opening it turns the token into an HttpOnly, SameSite=Strict cookie and takes
it out of the address bar; without it the board says how to get in and shows
nothing. A restarted server keeps its token, so the browser stays signed in.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.process, pytest.mark.browser]

# Imported by name only when Playwright is installed: without it (tox envs without the
# browser) the module is deselected by its marker, and must still import.
expect = pytest.importorskip("playwright.sync_api").expect


def test_the_printed_url_signs_the_browser_in_and_leaves_the_address_bar(stack, page):
    server = stack.start_server()
    with stack.api() as api:
        assert api.post("/companies", json={"name": "Signed"}).status_code == 201

    # Without the token: how to get in, and nothing of the operator's.
    page.goto(f"{stack.url()}/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.locator("#view")).to_contain_text("paperclip board")
    expect(page.get_by_role("link", name="Signed")).to_have_count(0)

    # The URL it printed: signed in, the token gone from the address bar and from scripts.
    assert server.token is not None
    page.goto(stack.board("/"))
    expect(page.get_by_role("link", name="Signed")).to_be_visible()
    assert page.url == f"{stack.url()}/"
    assert server.token not in page.evaluate("document.cookie")
    [cookie] = page.context.cookies()
    assert (cookie["value"], cookie["httpOnly"], cookie["sameSite"]) == (
        server.token,
        True,
        "Strict",
    )

    # A restart keeps the token: another tab of the browser is signed in still, live pages too.
    server.kill()
    stack.start_server()
    other = page.context.new_page()
    other.goto(f"{stack.url()}/#/")
    expect(other.get_by_role("link", name="Signed")).to_be_visible()
    other.get_by_role("link", name="Signed").click()
    expect(other.locator("#view")).not_to_contain_text("Sign in")


def test_a_wrong_token_signs_nothing_in(stack, page):
    stack.start_server()
    page.goto(f"{stack.url()}/?token=pco_wrong#/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.url == f"{stack.url()}/#/"
    assert page.context.cookies() == []
