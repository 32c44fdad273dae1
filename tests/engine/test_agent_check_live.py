"""A real runner says what it offers (``hello``, then ``provider_report``) and the control plane
checks an agent from it: ``POST …/agents/{id}/check`` against real processes."""

from __future__ import annotations

import pytest

from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def check(stack, ctx, agent=None) -> dict:
    agent = agent or ctx["agent"]
    with stack.api() as api:
        r = api.post(f"/companies/{ctx['company']['id']}/agents/{agent['id']}/check")
        assert r.status_code == 200, r.text
        return r.json()


def verdict(result: dict, name: str) -> dict:
    return next((c for c in result["checks"] if c["name"] == name), {})


def test_a_runner_reports_its_profiles_and_their_clis(stack):
    stack.start_server()
    ctx = stack.setup_issue([{"message": "hi"}])
    assert verdict(check(stack, ctx), "runner_connected")["code"] == "no_runner"

    stack.start_runner()
    # The probes follow the hello: the CLI is "unknown" until they arrive, then found.
    result = wait_until(
        lambda: (
            (r := check(stack, ctx)) and verdict(r, "cli_installed").get("status") == "ok" and r
        ),
        60,
        message="the runner's provider report",
    )
    assert result["ok"] is True, result
    [runner] = result["runners"]
    assert runner["hosts_provider"] and runner["cli_found"] is True
    assert "fake" in runner["launch_profiles"] and "default" in runner["launch_profiles"]
    assert runner["cli_version"]  # the fake's --version, as doctor reads it

    # Another agent on a profile no runner offers: named, with the code a run would get.
    with stack.api() as api:
        other = api.post(
            f"/companies/{ctx['company']['id']}/agents",
            json={"name": "elsewhere", "provider": "codex", "provider_config": {"launch": "gpu"}},
        ).json()
    found = verdict(check(stack, ctx, other), "launch_profile_offered")
    assert (found["status"], found["code"]) == ("failed", "launch_not_allowed")
    assert "'gpu'" in found["message"] and "fake" in found["message"]

    # Gone, the runner no longer counts.
    stack.runner.stop()
    wait_until(
        lambda: verdict(check(stack, ctx), "runner_connected")["status"] == "failed",
        30,
        message="the runner's departure",
    )
