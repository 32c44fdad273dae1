"""The current core with each plugin's previous release, installed from the wheel kept in
``tests/fixtures/wheels/previous/`` (tox env ``compat-previous``).

paperclip-codex 0.1.0 predates launch profiles and config schemas (hook API
1.2's optional fields): its agents name their command in the provider config
and its driver ignores the runner's profile. The current core still loads it,
lists its version, and completes a real run with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest

from tests.engine.conftest import Stack
from tests.providers.scenarios import WAIT, journal

pytestmark = pytest.mark.previous_release

FAKE = [sys.executable, "-m", "paperclip_codex.fake_app_server"]


def test_the_previous_codex_release_is_installed_and_loaded():
    assert version("paperclip-codex") == "0.1.0"
    out = subprocess.run(
        [sys.executable, "-m", "paperclip", "plugins", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    plugins = {p["name"]: p for p in json.loads(out.stdout)["plugins"]}
    assert (plugins["codex"]["version"], plugins["codex"]["status"]) == ("0.1.0", "loaded")
    for name in ("opencode", "pi", "gateway"):
        assert plugins[name]["status"] == "loaded", plugins[name]


@pytest.mark.process
def test_a_run_on_the_previous_codex_release_succeeds(database_url, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"call_tool": {"name": "post_comment", "arguments": {"body": "From 0.1.0."}}},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
                {"message": "Done."},
            ]
        )
    )
    command = [*FAKE, "--script", str(script)]
    stack = Stack(database_url=database_url, tmp=tmp_path)
    try:
        stack.start_server()
        # 0.1.0 offers no launch profile: the runner host offers one; the old driver then
        # starts the command of the agent's config, as it always did.
        stack.start_runner(launch={"codex": {"default": command}})
        ctx = stack.setup_issue(
            {}, provider_config={"command": command, "approval_policy": "never"}
        )
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert run["status"] == "succeeded", (run, stack.runner.tail() if stack.runner else "")
        # 0.1.0 reports no final prose (TurnResult.answer is 1.2's): only its comment is posted.
        comments = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
        assert comments == ["From 0.1.0."]
        assert [c["status"] for c in journal(stack, run["id"])] == ["settled", "settled"]
    finally:
        stack.stop()
