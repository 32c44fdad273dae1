"""Routines on the board in headless Chromium, against a real ``paperclip serve``.

Make a routine with a schedule and a webhook (its secret shown once), see its
next run, press Run now (an execution, its issue), press again (skipped: the
first issue is open), open its page (next runs, history newest first), and a
bad cron is refused with the API's code in the form. The schedule and the next
runs read at the routine's clock; on a phone each routine is a labelled card.
"""

from __future__ import annotations

import re

import pytest

from tests.board.conftest import PHONE, WIDE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


def test_make_a_routine_run_it_now_and_read_its_history(stack, page, screenshots):
    stack.start_server()
    ctx = stack.setup_issue({"turns": []})  # a company and an agent (no runner: nothing runs)
    cid = ctx["company"]["id"]
    page.goto(stack.board(f"/#/c/{cid}"))
    page.get_by_role("link", name="Routines").click()
    expect(page.get_by_role("heading", name="Routines")).to_be_visible()

    page.get_by_role("button", name="New routine").click()
    form = page.get_by_role("form", name="New routine")
    form.get_by_label("Name", exact=True).fill("Morning triage")
    form.get_by_label("Issue title").fill("Triage {{date}}")
    form.get_by_label("Cron (five fields; empty: no schedule)").fill("not a cron")
    form.get_by_label("Time zone").fill("Europe/Paris")
    form.get_by_role("button", name="Create routine").click()
    expect(form.locator(".error")).to_contain_text("invalid_cron")
    rows = page.locator("tr[data-routine]")
    expect(rows).to_have_count(0)

    form.get_by_label("Cron (five fields; empty: no schedule)").fill("0 9 * * 1-5")
    form.get_by_label("A signed webhook").check()
    form.get_by_role("button", name="Create routine").click()
    expect(form.get_by_role("status")).to_contain_text("pcwh_")  # shown once, until closed
    page.keyboard.press("Escape")
    expect(rows).to_have_count(1)
    # The schedule in words at the routine's clock, the cron behind a disclosure.
    expect(rows.first.locator(".schedule")).to_contain_text(
        "Every weekday at 09:00, Europe/Paris time"
    )
    expect(rows.first.locator(".schedule code")).to_have_text("0 9 * * 1-5")
    expect(rows.first.locator(".next-run")).to_contain_text(re.compile(r" · \w+.*09:00$"))
    expect(rows.first.locator("td.policies")).to_have_text(
        "Skipped while its last issue is open; runs missed during downtime are skipped."
    )

    ran = page.locator("p.ran")
    rows.first.get_by_role("button", name="Run Morning triage now").click()
    expect(ran).to_have_text("Morning triage: Started")
    rows.first.get_by_role("button", name="Run Morning triage now").click()
    expect(ran).to_have_text("Morning triage: Skipped · its last issue is still open")
    screenshots(page, "routines")

    # On a phone each routine is a card whose values are labelled, nothing wider than it.
    page.set_viewport_size(PHONE)
    expect(rows.first.locator("td.policies")).to_have_attribute("data-label", "Policies")
    expect(rows.first.locator("td[data-label='Next run']")).to_be_visible()
    labels = rows.first.locator("td[data-label]").evaluate_all(
        "cells => cells.map((c) => getComputedStyle(c, '::before').content)"
    )
    assert '"Next run"' in labels and '"Agent"' in labels, labels
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshots(page, "routines-phone", full_page=True)
    page.set_viewport_size(WIDE)

    rows.first.get_by_role("link", name="Morning triage").click()
    expect(page.get_by_role("heading", name="Morning triage")).to_be_visible()
    expect(page.get_by_role("list", name="Next runs").locator("li")).to_have_count(5)
    history = page.locator("tr[data-execution]")
    expect(history).to_have_count(2)
    expect(history.first).to_contain_text("Skipped")
    expect(history.last).to_contain_text("Started")
    history.last.get_by_role("link", name="issue").click()
    expect(page.get_by_role("heading", name="Triage")).to_be_visible()
