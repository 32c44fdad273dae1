"""Agents in Chromium against a real server and its runner: the form made from the provider's
JSON Schema (with raw JSON as the advanced option, and the API's refusal shown at its field),
and "check this agent" answered from what the runner said."""

from __future__ import annotations

import pytest

from tests.board import daily
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def stack(shared_stack):
    return shared_stack


def probed(stack, company_id: str, agent_id: str) -> bool:
    """The local runner reported its probes (they follow its hello)."""
    with stack.api() as api:
        result = api.post(f"/companies/{company_id}/agents/{agent_id}/check").json()
    return any(c["name"] == "cli_installed" and c["status"] == "ok" for c in result["checks"])


def test_make_an_agent_with_the_form_from_its_schema_and_check_it(stack, page, screenshots):
    acme = daily.company(stack, "Initech", "INI")
    page.goto(stack.board(f"/#/c/{acme['id']}/agents"))
    page.get_by_role("button", name="New agent").click()  # the form opens in a dialog
    form = page.get_by_role("form", name="Agent")
    expect(form.get_by_label("Provider", exact=True)).to_have_value("codex")
    settings = form.locator("fieldset[data-provider='codex']")
    # A field per property of the codex schema: a menu for an enum, a number box, a text box.
    expect(settings.get_by_label("Sandbox")).to_have_js_property("tagName", "SELECT")
    expect(settings.get_by_label("Turn timeout seconds")).to_have_attribute("type", "number")
    form.get_by_label("Name", exact=True).fill("coder")
    settings.get_by_label("Launch").fill("fake")
    settings.get_by_label("Model", exact=True).fill("bad model!")
    settings.get_by_label("Sandbox").select_option("workspace-write")
    form.get_by_role("button", name="Create agent").click()
    # The API's refusal, at its field; nothing made.
    expect(settings.locator("[data-config-key='model'] .field-error")).to_contain_text(
        "does not match"
    )
    expect(form.get_by_role("alert")).to_contain_text("invalid_provider_config")
    assert daily.get(stack, f"/companies/{acme['id']}/agents")["items"] == []

    settings.get_by_label("Model", exact=True).fill("scripted-form")
    settings.get_by_label("Turn timeout seconds").fill("600")
    # The advanced option: the same config as JSON, changed there, read back into the fields.
    settings.get_by_label("Edit as JSON (advanced)").check()
    raw = settings.get_by_label("Provider configuration (JSON)")
    expect(raw).to_have_value(
        '{\n  "launch": "fake",\n  "model": "scripted-form",\n  "sandbox": "workspace-write",\n'
        '  "turn_timeout_seconds": 600\n}'
    )
    raw.fill(
        '{"launch": "fake", "model": "scripted-form", "sandbox": "workspace-write", '
        '"turn_timeout_seconds": 600, "approvals": "approve"}'
    )
    settings.get_by_label("Edit as JSON (advanced)").uncheck()
    expect(settings.get_by_label("Approvals")).to_have_value('"approve"')
    screenshots(page, "agent-form", full_page=True)
    form.get_by_role("button", name="Create agent").click()
    row = page.locator("tr[data-agent]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("fake")
    [made] = daily.get(stack, f"/companies/{acme['id']}/agents")["items"]
    assert made["provider_config"] == {
        "launch": "fake",
        "model": "scripted-form",
        "sandbox": "workspace-write",
        "turn_timeout_seconds": 600,
        "approvals": "approve",
    }

    # Check it: the runner offers its profile and the profile's program is there.
    wait_until(lambda: probed(stack, acme["id"], made["id"]), 60, message="the runner's probes")
    page.get_by_role("button", name="Check coder").click()
    report = page.get_by_role("region", name="Check of coder")
    expect(report).to_have_attribute("data-ok", "true")
    for name in (
        "provider_installed",
        "config_valid",
        "runner_connected",
        "launch_profile_offered",
        "cli_installed",
    ):
        expect(report.locator(f"li[data-check='{name}']")).to_have_attribute("data-status", "ok")
    expect(report.locator("tr[data-runner]")).to_contain_text("fake")
    screenshots(page, "agents", full_page=True)

    # Changed with the same form: a profile no runner offers, which the check names.
    page.get_by_role("button", name="Edit coder").click()
    expect(settings.get_by_label("Model", exact=True)).to_have_value("scripted-form")
    form.locator("fieldset[data-provider='codex']").get_by_label("Launch").fill("gpu")
    form.get_by_role("button", name="Save agent").click()
    expect(row).to_contain_text("gpu")
    page.get_by_role("button", name="Check coder").click()
    expect(report).to_have_attribute("data-ok", "false")
    offered = report.locator("li[data-check='launch_profile_offered']")
    expect(offered).to_have_attribute("data-status", "failed")
    expect(offered).to_contain_text("launch_not_allowed")
    [changed] = daily.get(stack, f"/companies/{acme['id']}/agents")["items"]
    assert changed["provider_config"]["launch"] == "gpu"
    assert changed["provider_config"]["approvals"] == "approve"  # the rest kept
