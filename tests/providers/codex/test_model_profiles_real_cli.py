"""Model access is the runner host's decision: the real Codex CLI never reaches a foreign endpoint.

Issue 38, finding 2: an agent's ``base_url`` and ``env_key`` made the runner send any of
its variables to any host. Here the runner host defines one model profile (the scripted
model on 127.0.0.1, its key variable); a second scripted model on 127.0.0.1, which the
test owns and which would answer, plays the attacker's host. An agent pointed at it is
refused by the runner before Codex starts, and at the door once the runner has said its
profiles; the foreign endpoint receives nothing. The allowed endpoint, as a control, runs.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.providers.codex.conftest import MODEL_KEY_VARIABLE, real_agent_config
from tests.providers.codex.test_real_cli import WAIT, read_comment_finish
from tests.providers.scenarios import assert_succeeded_once
from tests.support.model_endpoint import ModelEndpoint

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.codex_cli]

SECRET_VARIABLE = "RUNNER_SECRET_API_KEY"
SECRET = "the-runner-hosts-own-secret"


def test_an_agent_pointed_at_a_foreign_endpoint_is_refused_and_it_receives_nothing(
    real_stack, model_endpoint
):
    stack = real_stack
    stack.start_server()
    with ModelEndpoint() as foreign:
        model = f"scripted-{uuid.uuid4().hex[:8]}"
        foreign.script(model, read_comment_finish("Leaked."))  # it would answer, if reached
        attack = {
            **real_agent_config(foreign, model),
            "env_key": SECRET_VARIABLE,
            "model_profile": "local",
        }
        # Made before any runner said its profiles: the door cannot know, the runner decides.
        ctx = stack.setup_issue({}, provider_config=attack)
        home = stack.tmp / "home"
        home.mkdir()
        stack.start_runner(
            launch={"codex": {"default": [str(stack.codex_cli), "app-server"]}},
            env={
                MODEL_KEY_VARIABLE: "scripted-dummy-key",
                SECRET_VARIABLE: SECRET,
                "HOME": str(home),
                "PAPERCLIP_RUNNER_MODELS": json.dumps(
                    {"local": {"endpoints": [model_endpoint.url], "keys": [MODEL_KEY_VARIABLE]}}
                ),
            },
        )
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert (run["status"], run["error_code"]) == ("failed", "model_profile_not_allowed"), run
        assert "'local'" in run["error_message"] and foreign.url in run["error_message"], run

        # The runner has said its profiles: the door refuses the same config, and the key.
        company = ctx["company"]["id"]
        with stack.api() as api:
            allowed_key = {**real_agent_config(model_endpoint, model), "model_profile": "local"}
            for config, field, says in (
                (
                    attack,
                    "base_url",
                    f"'local' does not allow the endpoint {foreign.url!r} "
                    f"(allowed: {model_endpoint.url})",
                ),
                (
                    {**allowed_key, "env_key": SECRET_VARIABLE},
                    "env_key",
                    f"(allowed: {MODEL_KEY_VARIABLE}; never PAPERCLIP_*)",
                ),
                (
                    {**allowed_key, "model_profile": "other"},
                    "model_profile",
                    "no runner offers the model profile 'other' for codex (offered: local)",
                ),
            ):
                r = api.post(
                    f"/companies/{company}/agents",
                    json={
                        "name": f"a-{uuid.uuid4().hex[:6]}",
                        "provider": "codex",
                        "provider_config": config,
                    },
                )
                assert r.status_code == 422, r.text
                body = r.json()
                assert body["code"] == "model_profile_not_allowed", body
                assert [d["field"] for d in body["details"]] == [f"provider_config.{field}"]
                assert says in body["message"], body

            # The control: the profile's own endpoint and key run the real CLI to the end.
            allowed = f"scripted-{uuid.uuid4().hex[:8]}"
            model_endpoint.script(allowed, read_comment_finish("Looking at it."))
            agent = api.post(
                f"/companies/{company}/agents",
                json={
                    "name": "allowed",
                    "provider": "codex",
                    "provider_config": {
                        **real_agent_config(model_endpoint, allowed),
                        "model_profile": "local",
                    },
                },
            )
            assert agent.status_code == 201, agent.text
            issue = api.post(
                f"/companies/{company}/issues",
                json={"title": "Fix the build", "assignee_agent_id": agent.json()["id"]},
            ).json()
        control = {**ctx, "agent": agent.json(), "issue": issue}
        done = stack.wait_for_terminal_run(control, timeout=WAIT)
        assert_succeeded_once(stack, control, done, "Looking at it.")
        assert model_endpoint.scripted(allowed)
        # Nothing ever reached the foreign host: no request, no key.
        assert foreign.received() == []
