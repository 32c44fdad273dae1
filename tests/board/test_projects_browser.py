"""Projects on the board in headless Chromium, against a real ``paperclip serve``.

Make two projects (a folder, a clone URL) and change one; give an agent a
default project; make an issue in a project, move it to the other, find it by
the project filter; an issue given to the agent gets its default project; and
a project whose issue is open is not deleted: the API's refusal is shown in
its row.
"""

from __future__ import annotations

import pytest

from tests.board.conftest import PHONE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


def test_make_projects_and_issues_in_them(stack, page, screenshots):
    stack.start_server()
    with stack.api() as api:
        company = api.post("/companies", json={"name": "Acme"}).json()
    cid = company["id"]
    page.goto(stack.board(f"/#/c/{cid}"))
    expect(page.get_by_role("heading", name="Issues")).to_be_visible()

    page.get_by_role("link", name="Projects").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    page.get_by_role("button", name="New project").click()
    form = page.get_by_role("form", name="Project")
    form.get_by_label("Name", exact=True).fill("Website")
    form.get_by_label("Description").fill("The public site")
    form.get_by_label("Repository folder").fill("/srv/repos/website")
    form.get_by_label("Default branch").fill("main")
    form.get_by_role("button", name="Create project").click()
    rows = page.locator("tr[data-project]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("/srv/repos/website")
    expect(rows.first).to_contain_text("paperclip/")

    page.get_by_role("button", name="New project").click()
    form.get_by_label("A clone URL").check()
    expect(form.get_by_label("Repository folder")).to_be_hidden()
    form.get_by_label("Name", exact=True).fill("Docs")
    form.get_by_label("Repository URL").fill("https://git.example/acme/docs.git")
    form.get_by_label("Branch prefix").fill("docs/")
    form.get_by_role("button", name="Create project").click()
    expect(rows).to_have_count(2)
    docs_row = page.locator("tr[data-project]", has_text="Docs")
    expect(docs_row).to_contain_text("https://git.example/acme/docs.git")

    # A bad folder is refused with the API's code, shown in the form; nothing is made.
    page.get_by_role("button", name="New project").click()
    form.get_by_label("A folder on the runner host").check()
    form.get_by_label("Name", exact=True).fill("Broken")
    form.get_by_label("Repository folder").fill("relative/path")
    form.get_by_role("button", name="Create project").click()
    expect(form.locator(".error")).to_contain_text("invalid_repo_path")
    expect(rows).to_have_count(2)

    page.keyboard.press("Escape")  # the refused form's dialog closes
    page.get_by_role("button", name="Edit Website").click()
    expect(form.get_by_role("heading")).to_have_text("Edit project: Website")
    expect(form.get_by_label("Repository folder")).to_have_value("/srv/repos/website")
    form.get_by_label("Description").fill("The public site, in English")
    form.get_by_label("Run the repository's git hooks").check()
    form.get_by_role("button", name="Save project").click()
    website_row = page.locator("tr[data-project]", has_text="Website")
    expect(website_row).to_contain_text("in English")
    expect(page.get_by_role("dialog", name="New project")).to_be_hidden()  # saved: closed
    with stack.api() as api:
        projects = {p["name"]: p for p in api.get(f"/companies/{cid}/projects").json()["items"]}
    assert projects["Website"]["hooks_enabled"] and projects["Website"]["default_branch"] == "main"
    assert projects["Docs"]["repo_path"] is None and projects["Docs"]["branch_prefix"] == "docs/"

    # An agent whose issues, given without a project, go to the website.
    page.get_by_role("link", name="Agents").click()
    expect(page.get_by_role("heading", name="Agents")).to_be_visible()
    page.get_by_role("button", name="New agent").click()
    page.get_by_label("Name", exact=True).fill("coder")
    page.get_by_label("Provider", exact=True).select_option("codex")
    page.get_by_label("Default project (of").select_option(label="Website")
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_label("Default project of coder")).to_have_value(projects["Website"]["id"])

    page.get_by_role("link", name="Acme: issues").click()
    expect(page.get_by_role("heading", name="Issues")).to_be_visible()
    page.get_by_role("button", name="New issue").click()
    new_issue = page.get_by_role("form", name="New issue")
    new_issue.get_by_label("Title").fill("Fix the homepage")
    new_issue.get_by_label("Project").select_option(label="Website")
    new_issue.get_by_role("button", name="Create issue").click()
    expect(page.locator("#issue-project")).to_have_text("Website")
    expect(page.locator("#issue-project")).to_have_attribute(
        "data-project", projects["Website"]["id"]
    )

    # Moved to the other project from the issue page.
    page.get_by_role("region", name="Details").get_by_label("Project").select_option(label="Docs")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#issue-project")).to_have_text("Docs")

    page.get_by_role("link", name="Acme: issues").click()
    expect(page.get_by_role("heading", name="Issues")).to_be_visible()
    issue_rows = page.locator("tr[data-issue]")
    expect(issue_rows).to_have_count(1)
    expect(issue_rows.first.locator("td.project")).to_have_text("Docs")
    filters = page.get_by_role("group", name="Filters")
    filters.get_by_label("Project").select_option(label="Website")
    expect(issue_rows).to_have_count(0)
    filters.get_by_label("Project").select_option(label="Docs")
    expect(issue_rows).to_have_count(1)

    # Given to the agent without a project: the agent's default project.
    filters.get_by_label("Project").select_option(label="Any")
    page.get_by_role("button", name="New issue").click()
    new_issue.get_by_label("Title").fill("Update the footer")
    new_issue.get_by_label("Assignee").select_option(label="coder (codex)")
    new_issue.get_by_role("button", name="Create issue").click()
    expect(page.locator("#issue-project")).to_have_text("Website")

    # Docs has an open issue: not deleted, and the row says why.
    page.get_by_role("link", name="Projects").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    page.get_by_role("button", name="Delete Docs").click()
    page.get_by_role("button", name="Delete Docs").click()  # the second press confirms
    expect(docs_row.locator(".error")).to_contain_text("project_in_use")
    expect(rows).to_have_count(2)
    screenshots(page, "projects", full_page=True)

    page.set_viewport_size(PHONE)
    page.reload()
    expect(rows).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
