"""The current core with each plugin's previous release, installed from the wheel kept in
``tests/fixtures/wheels/previous/`` (tox env ``compat-previous``).

paperclip-codex 0.2.0 predates durable sessions (hook API 1.3): it never reports
its session while a turn runs, nor its turn's id. The current core still loads
it, lists its version, and completes a real run with it. The fake Codex the run plays
against is this tree's (paperclip-codex-testing, installed by the environment without its
dependency on the current plugin), as a real CLI does not come with the plugin either.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from importlib.metadata import version

import pytest

from tests.engine.conftest import Stack
from tests.providers.scenarios import WAIT, journal
from tests.support.db import query

pytestmark = pytest.mark.previous_release


def test_the_previous_codex_release_is_installed_and_loaded():
    assert version("paperclip-codex") == "0.2.0"
    out = subprocess.run(
        [sys.executable, "-m", "paperclip", "plugins", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    plugins = {p["name"]: p for p in json.loads(out.stdout)["plugins"]}
    assert (plugins["codex"]["version"], plugins["codex"]["status"]) == ("0.2.0", "loaded")
    for name in ("opencode", "pi", "gateway"):
        assert plugins[name]["status"] == "loaded", plugins[name]


@pytest.mark.process
def test_a_run_on_the_previous_codex_release_succeeds(paperclip_database_url, tmp_path):
    say = {"call_tool": {"name": "post_comment", "arguments": {"body": "From 0.2.0."}}}
    finish = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}}
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    try:
        stack.start_server()
        stack.start_runner()
        ctx = stack.setup_issue({"turns": [[say, {"message": "Done."}, finish]]})
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert run["status"] == "succeeded", (run, stack.runner.tail() if stack.runner else "")
        comments = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
        assert comments[0] == "From 0.2.0."
        assert [c["status"] for c in journal(stack, run["id"])] == ["settled", "settled"]
        # 0.2.0 names no provider turn id (1.3's): its turn is recorded without one.
        turns = query(
            stack.database_url,
            "SELECT provider_turn_id FROM run_turns WHERE run_id = $1",
            uuid.UUID(run["id"]),
        )
        assert turns == [{"provider_turn_id": None}]
    finally:
        stack.stop()
