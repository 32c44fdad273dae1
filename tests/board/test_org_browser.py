"""The org chart in Chromium against a real server: agents drawn under their managers, an
agent's manager changed with its form, a loop refused where the person made it."""

from __future__ import annotations

import pytest

from tests.board import daily

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def stack(shared_stack):
    return shared_stack


def hire(stack, company_id: str, name: str, role: str, manager: dict | None = None) -> dict:
    made = daily.agent(stack, company_id, [], name=name)
    with stack.api() as api:
        body = {"role": role, "reports_to": manager["id"] if manager else None}
        r = api.patch(f"/companies/{company_id}/agents/{made['id']}", json=body)
        assert r.status_code == 200, r.text
        return r.json()


def test_the_org_chart_draws_the_tree_and_a_move_redraws_it(stack, page, screenshots):
    acme = daily.company(stack, "Globex", "GLX")
    ceo = hire(stack, acme["id"], "hank", "CEO")
    cto = hire(stack, acme["id"], "frank", "CTO", ceo)
    hire(stack, acme["id"], "dev-1", "engineer", cto)
    hire(stack, acme["id"], "dev-2", "engineer", cto)
    hire(stack, acme["id"], "scout", "marketing", ceo)

    page.goto(stack.board(f"/#/c/{acme['id']}/org"))
    chart = page.get_by_role("list", name="Org chart")
    top = chart.locator(":scope > li")
    expect(top).to_have_count(1)
    expect(top.locator(".org-name").first).to_have_text("hank")
    under_ceo = page.get_by_role("list", name="Reports of hank").locator(":scope > li")
    expect(under_ceo.locator(":scope > .org-card .org-name")).to_have_text(["frank", "scout"])
    under_cto = page.get_by_role("list", name="Reports of frank").locator(":scope > li")
    expect(under_cto.locator(".org-name")).to_have_text(["dev-1", "dev-2"])
    expect(page.locator("[data-org-agent='frank'] .org-role").first).to_have_text("CTO")
    screenshots(page, "org-chart", full_page=True)

    # Moved with the agent's form: scout now reports to frank.
    page.goto(stack.board(f"/#/c/{acme['id']}/agents"))
    page.get_by_role("button", name="Edit scout").click()
    form = page.get_by_role("form", name="Agent")
    form.get_by_label("Reports to").select_option(label="frank (CTO)")
    form.get_by_role("button", name="Save agent").click()
    expect(form).to_be_hidden()
    page.goto(stack.board(f"/#/c/{acme['id']}/org"))
    under_cto = page.get_by_role("list", name="Reports of frank").locator(":scope > li")
    expect(under_cto.locator(".org-name")).to_have_text(["dev-1", "dev-2", "scout"])

    # A loop is refused at the form, and nothing changes.
    page.goto(stack.board(f"/#/c/{acme['id']}/agents"))
    page.get_by_role("button", name="Edit hank").click()
    form = page.get_by_role("form", name="Agent")
    form.get_by_label("Reports to").select_option(label="dev-1 (engineer)")
    form.get_by_role("button", name="Save agent").click()
    expect(form.get_by_role("alert")).to_have_attribute("data-code", "reports_to_cycle")
    assert daily.get(stack, f"/companies/{acme['id']}/agents/{ceo['id']}")["reports_to"] is None


def test_an_issue_shows_its_parts_and_what_it_is_a_part_of(stack, page, screenshots):
    acme = daily.company(stack, "Initrode", "INT")
    goal = daily.issue(stack, acme["id"], "Ship the release")
    first = daily.issue(stack, acme["id"], "Write the changelog", parent_id=goal["id"])
    tag = daily.issue(stack, acme["id"], "Tag the version", parent_id=goal["id"])
    with stack.api() as api:
        r = api.patch(f"/companies/{acme['id']}/issues/{first['id']}", json={"status": "done"})
        assert r.status_code == 200, r.text
        r = api.patch(f"/companies/{acme['id']}/issues/{tag['id']}", json={"status": "blocked"})
        assert r.status_code == 200, r.text

    # The list shows the tree: each part names the issue it is a part of.
    page.goto(stack.board(f"/#/c/{acme['id']}"))
    row = page.locator("tr[data-identifier='INT-2']")
    expect(row.locator(".part-of")).to_have_text(" · part of INT-1")
    expect(page.locator("tr[data-identifier='INT-1'] .part-of")).to_have_count(0)

    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{goal['identifier']}"))
    panel = page.get_by_role("region", name="Parts")
    expect(panel.locator(".parts-progress")).to_have_text("1 of 2 done · 1 open")
    expect(panel.get_by_role("list", name="Its parts").locator("li")).to_have_count(2)
    expect(panel.locator("[data-part='INT-2']")).to_have_attribute("data-status", "done")
    expect(panel.locator(".parts-cost")).to_have_text("Spent with its parts: no usage")
    expect(panel).not_to_contain_text("null")
    screenshots(page, "issue-parts", full_page=True)

    panel.get_by_role("link", name="INT-3").click()
    expect(page.locator("[data-identifier='INT-3']")).to_be_visible()
    part_of = page.get_by_role("region", name="Parts").locator("[data-part-of]")
    expect(part_of).to_contain_text("Part of INT-1 · Ship the release")

    # A blocked part nobody is on waits in the inbox.
    page.goto(stack.board(f"/#/c/{acme['id']}/inbox"))
    blocked = page.get_by_role("list", name="Blocked issues")
    expect(blocked.locator("li")).to_have_count(1)
    expect(blocked).to_contain_text("INT-3 · Tag the version")
