"""Model profiles with the fake Codex: the implicit profile of a host that defines none.

Real processes (control plane, runner, the fake app-server). The quickstart's configs run
as before; what the implicit ``default`` profile does not allow (a host other than this
machine, ``danger-full-access``, a ``PAPERCLIP_`` variable as the key) is refused by the
runner before any process starts, and at the door once the runner has said its profiles.
"""

from __future__ import annotations

import pytest

from tests.engine.conftest import FAKE_PROFILE, Stack

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

FINISH = {
    "turns": [
        [
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
            {"message": "Done."},
        ]
    ]
}


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    stack.start_server()
    yield stack
    stack.stop()


def test_the_implicit_profile_refuses_what_the_quickstart_does_not_use(stack):
    foreign = {"base_url": "http://models.attacker.example/v1", "env_key": "OPENAI_API_KEY"}
    # Made before the runner said its profiles: accepted here, refused by the runner.
    ctx = stack.setup_issue(FINISH, extra_config=foreign)
    stack.start_runner()
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("failed", "model_profile_not_allowed"), run
    assert "http://models.attacker.example/v1" in run["error_message"], run
    assert "http://127.0.0.1:*" in run["error_message"], run
    # Refused before any process started: the fake never ran.
    assert not stack.fake_log.exists() or stack.fake_log.read_text() == "", stack.fake_log

    company = ctx["company"]["id"]
    with stack.api() as api:
        # The agent's check says so too, as a run would.
        result = api.post(f"/companies/{company}/agents/{ctx['agent']['id']}/check").json()
        [check] = [c for c in result["checks"] if c["name"] == "model_profile_allowed"]
        assert (check["status"], check["code"]) == ("failed", "model_profile_not_allowed")
        assert "models.attacker.example" in check["message"], check

        def create(name: str, config: dict):
            return api.post(
                f"/companies/{company}/agents",
                json={"name": name, "provider": "codex", "provider_config": config},
            )

        base = {"launch": FAKE_PROFILE, "model": ctx["model"]}
        for name, config, field in (
            ("foreign", {**base, **foreign}, "base_url"),
            ("unsandboxed", {**base, "sandbox": "danger-full-access"}, "sandbox"),
            ("profile", {**base, "model_profile": "elsewhere"}, "model_profile"),
        ):
            r = create(name, config)
            assert r.status_code == 422, r.text
            assert r.json()["code"] == "model_profile_not_allowed", r.text
            assert r.json()["details"][0]["field"] == f"provider_config.{field}", r.text
        # Not a profile name at all: malformed, whatever the runners say.
        r = create("bad-name", {**base, "model_profile": ["a"]})
        assert (r.status_code, r.json()["code"]) == (422, "invalid_model_profile"), r.text
        # A PAPERCLIP_ variable is no key under any profile (the schema refuses it first).
        r = create("runner-key", {**base, "env_key": "PAPERCLIP_RUNNER_API_KEY"})
        assert r.status_code == 422, r.text

        # What the quickstart uses is allowed: a model on this machine, escalations answered.
        quickstart = {
            **base,
            "base_url": "http://127.0.0.1:8765/v1",
            "env_key": "SCRIPTED_MODEL_API_KEY",
            "approval_policy": "on-request",
            "approvals": "approve",
        }
        assert create("quickstart", quickstart).status_code == 201
        # The control: the fake, as the quickstart's first agent, runs to the end.
        agent = create("fake-coder", {**base, "model_profile": "default"})
        assert agent.status_code == 201, agent.text
        result = api.post(f"/companies/{company}/agents/{agent.json()['id']}/check").json()
        [check] = [c for c in result["checks"] if c["name"] == "model_profile_allowed"]
        assert check["status"] == "ok", check
        issue = api.post(
            f"/companies/{company}/issues",
            json={"title": "Say hello", "assignee_agent_id": agent.json()["id"]},
        ).json()
    done = stack.wait_for_terminal_run({**ctx, "issue": issue})
    assert done["status"] == "succeeded", (done, stack.runner.tail())
