"""Finding and moving issues in Chromium against a real server: search, filters and sort (the
API's list parameters, kept in the URL); the kanban board, by drag, by keyboard and by each card's
status menu, and on a phone; the keyboard shortcuts; the dark theme; a phone's width; the
company's links on every page."""

from __future__ import annotations

import re

import pytest

from tests.board import daily
from tests.board.conftest import PHONE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture(scope="module")
def acme(shared_stack):
    """A company with issues of every kind to find: titles, descriptions, priorities."""
    made = daily.company(shared_stack, "Globex", "GLX")
    for title, extra in [
        ("Fix the build", {"priority": "high"}),
        ("Write the docs", {"description": "The BUILD page is stale", "priority": "low"}),
        ("Release 2.0", {"priority": "urgent"}),
        ("Plan the offsite", {"status": "backlog"}),
    ]:
        daily.issue(shared_stack, made["id"], title, **extra)
    return made


@pytest.fixture
def stack(shared_stack):
    return shared_stack


def titles(page) -> list[str]:
    return page.locator("tr[data-issue] td:nth-child(2)").all_inner_texts()


def test_search_filter_and_sort_the_issues(stack, acme, page, screenshots):
    page.goto(stack.board(f"/#/c/{acme['id']}"))
    rows = page.locator("tr[data-issue]")
    expect(rows).to_have_count(4)
    assert titles(page) == ["Plan the offsite", "Release 2.0", "Write the docs", "Fix the build"]

    filters = page.get_by_role("group", name="Filters")
    filters.get_by_label("Search").fill("build")  # the title, or the description
    expect(rows).to_have_count(2)
    assert titles(page) == ["Write the docs", "Fix the build"]
    filters.get_by_label("Priority").select_option("high")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("GLX-1")
    filters.get_by_label("Priority").select_option("")
    filters.get_by_label("Sort").select_option("created")
    expect(rows.first).to_contain_text("Fix the build")
    screenshots(page, "issues")

    # The filters are in the URL: a reload (or a shared link) shows the same list.
    assert "q=build" in page.url and "sort=created" in page.url
    page.reload()
    expect(rows).to_have_count(2)
    expect(filters.get_by_label("Search")).to_have_value("build")
    assert titles(page) == ["Fix the build", "Write the docs"]

    filters.get_by_label("Search").fill("glx-3")  # an identifier, any case
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Release 2.0")
    filters.get_by_label("Search").fill("")
    filters.get_by_label("Status").select_option("backlog")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".badge")).to_have_text("Backlog")
    # An issue's page is named by its identifier.
    rows.first.get_by_role("link").first.click()
    expect(page.get_by_role("heading", name="GLX-4 · Plan the offsite")).to_be_visible()
    assert page.url.endswith(f"#/c/{acme['id']}/issues/GLX-4"), page.url


def test_kanban_moves_an_issue_by_drag_and_by_keyboard(stack, acme, page, screenshots):
    task = daily.issue(stack, acme["id"], "Triage the bug reports")
    page.goto(stack.board(f"/#/c/{acme['id']}/kanban"))
    todo = page.locator("[data-column='todo']")
    doing = page.locator("[data-column='in_progress']")
    card = page.locator(f"[data-issue='{task['id']}']")
    expect(todo.locator(f"[data-issue='{task['id']}']")).to_be_visible()
    screenshots(page, "kanban", full_page=True)

    card.drag_to(doing)
    expect(doing.locator(f"[data-issue='{task['id']}']")).to_be_visible()
    expect(page.locator("[data-announce]")).to_have_text(
        f"{task['identifier']} moved to In progress."
    )
    stored = daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")
    assert stored["status"] == "in_progress"

    # From the keyboard: the card keeps the focus as it moves.
    card.focus()
    page.keyboard.press("Shift+ArrowRight")
    expect(
        page.locator("[data-column='in_review']").locator(f"[data-issue='{task['id']}']")
    ).to_be_focused()
    expect(page.locator("[data-announce]")).to_have_text(
        f"{task['identifier']} moved to In review."
    )
    assert daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["status"] == "in_review"
    # Or its menu button: a menu of every status, the current one checked.
    done = page.locator("[data-column='done']")
    expect(done).to_have_class(re.compile(r"\bfolded\b"))  # closed columns start folded
    menu_button = card.get_by_role("button", name=f"Change status of {task['identifier']}")
    menu_button.click()
    menu = page.get_by_role("menu", name=f"Move {task['identifier']} to")
    expect(menu).to_be_visible()
    expect(menu.get_by_role("menuitemradio", name="In review")).to_have_attribute(
        "aria-checked", "true"
    )
    expect(menu.get_by_role("menuitemradio", name="In review")).to_be_focused()
    screenshots(page, "kanban-menu")
    page.keyboard.press("Escape")  # closes it, the focus back on the button
    expect(menu).to_be_hidden()
    expect(menu_button).to_be_focused()
    assert daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["status"] == "in_review"
    page.keyboard.press("Enter")
    expect(menu).to_be_visible()
    page.keyboard.press("ArrowDown")  # Blocked
    expect(menu.get_by_role("menuitemradio", name="Blocked")).to_be_focused()
    page.keyboard.press("c")  # a letter: the next choice it starts
    expect(menu.get_by_role("menuitemradio", name="Cancelled")).to_be_focused()
    page.keyboard.press("ArrowUp")  # Done
    expect(menu.get_by_role("menuitemradio", name="Done")).to_be_focused()
    page.keyboard.press("Enter")
    # The folded column opens, the card keeps the focus there; the API has it.
    expect(done.locator(f"[data-issue='{task['id']}']")).to_be_focused()
    expect(page.locator("[data-announce]")).to_have_text(f"{task['identifier']} moved to Done.")
    assert daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["status"] == "done"
    # From the mouse, back to Todo.
    done.get_by_role("button", name=f"Change status of {task['identifier']}").click()
    page.get_by_role("menuitemradio", name="Todo").click()
    expect(todo.locator(f"[data-issue='{task['id']}']")).to_be_visible()
    assert daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["status"] == "todo"
    # A column's name folds and unfolds it; the board remembers it.
    todo.get_by_role("button", name="Todo").click()
    expect(todo.locator(f"[data-issue='{task['id']}']")).to_be_hidden()
    page.reload()
    expect(todo).to_have_class(re.compile(r"\bfolded\b"))
    todo.get_by_role("button", name="Todo").click()
    expect(todo.locator(f"[data-issue='{task['id']}']")).to_be_visible()


def test_kanban_on_a_phone_is_sections_without_sideways_scroll(stack, acme, page, screenshots):
    task = daily.issue(stack, acme["id"], "Answer the phone survey", priority="urgent")
    page.set_viewport_size(PHONE)
    page.goto(stack.board(f"/#/c/{acme['id']}/kanban"))
    card = page.locator(f".kanban-card[data-issue='{task['id']}']")
    expect(card).to_be_visible()
    # Nothing wider than the screen: the columns are sections, one under the other.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    boxes = [page.locator(f"[data-column='{s}']").bounding_box() for s in ("backlog", "todo")]
    assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"], boxes
    assert boxes[0]["width"] == boxes[1]["width"] <= PHONE["width"]
    expect(page.locator("#kanban-help")).to_be_hidden()  # no keyboard hints on a phone
    # A section folds by its name.
    todo = page.locator("[data-column='todo']")
    toggle = todo.get_by_role("button", name="Todo")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    screenshots(page, "kanban-phone", full_page=True)
    toggle.click()
    expect(card).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    # The status from the card's menu, as on a wide screen.
    card.get_by_role("button", name=f"Change status of {task['identifier']}").click()
    page.get_by_role("menuitemradio", name="In progress").click()
    expect(page.locator("[data-column='in_progress']").locator(card)).to_be_visible()
    assert (
        daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["status"] == "in_progress"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_shortcuts_dark_theme_phone_width_and_the_company_links(stack, acme, page, screenshots):
    page.goto(stack.board(f"/#/c/{acme['id']}"))
    expect(page.locator("tr[data-issue]").first).to_be_visible()
    page.keyboard.press("?")
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help_dialog).to_be_visible()
    expect(help_dialog).to_contain_text("Go to the inbox")
    screenshots(page, "shortcuts")
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()
    page.get_by_role("button", name="Keyboard shortcuts (?)").click()  # or from the header
    help_dialog.get_by_role("button", name="Close").click()
    expect(help_dialog).to_be_hidden()

    page.keyboard.press("g")
    page.keyboard.press("i")
    expect(page.get_by_role("heading", name="Inbox", exact=True)).to_be_visible()
    page.keyboard.press("/")  # search: back to the list, the search box focused
    expect(page.get_by_label("Search")).to_be_focused()
    page.keyboard.type("c")  # typed into the box, not a shortcut
    expect(page.get_by_label("Search")).to_have_value("c")
    page.locator("main").click()
    page.get_by_label("Search").blur()
    page.keyboard.press("c")
    # The New issue form opens in a dialog, its title focused; Esc closes it.
    expect(page.get_by_role("form", name="New issue").get_by_label("Title")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="New issue")).to_be_hidden()

    # The company's links stay on the instance's own pages.
    page.get_by_role("link", name="Plugins").click()
    expect(page.get_by_role("heading", name="Plugins")).to_be_visible()
    expect(page.get_by_role("link", name="Globex: issues")).to_be_visible()
    expect(page.get_by_role("link", name="Inbox", exact=True)).to_be_visible()

    # A dark system theme darkens the page.
    page.emulate_media(color_scheme="dark")
    page.goto(stack.board(f"/#/c/{acme['id']}/issues/GLX-1"))
    expect(page.get_by_role("heading", name="GLX-1 · Fix the build")).to_be_visible()
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(17, 20, 24)", background
    screenshots(page, "issue-dark", full_page=True)
    page.emulate_media(color_scheme="light")

    # On a phone, nothing is cut off: lists are cards, the header a menu, no keyboard hints.
    page.set_viewport_size(PHONE)
    page.goto(stack.board(f"/#/c/{acme['id']}/agents"))
    expect(page.get_by_role("heading", name="Agents")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.locator(".scroll-hint:visible")).to_have_count(0)
    expect(page.get_by_role("button", name="Keyboard shortcuts (?)")).to_be_hidden()
    page.goto(stack.board(f"/#/c/{acme['id']}"))
    expect(page.locator("tr[data-issue]").first).to_be_visible()
    # Each issue a card, each field labelled.
    status = page.locator("tr[data-issue] td[data-label='Status']").first
    assert status.evaluate("td => getComputedStyle(td, '::before').content") == '"Status"'
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshots(page, "issues-phone", full_page=True)
