"""Seed 000 with the real Codex CLI: a refused finish is corrected in the same turn.

The scripted model reads its conversation the way a model does: it reports,
gets the finish tool's correction back through Codex, calls
``read_current_wake_comments`` from the correction's cursor, follows every
page's ``next_cursor``, and reports again. Control plane, runner and
``codex app-server`` are separate processes; the model is the scripted
endpoint on 127.0.0.1.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from paperclip_hookspecs.completion import READ_CURRENT_WAKE_COMMENTS

from tests.providers.codex.conftest import real_agent_config, start_real
from tests.support.db import query
from tests.support.model_endpoint_script import Step, calls, mcp_tool, reply, say

pytestmark = [
    pytest.mark.process,
    pytest.mark.installed_plugins,
    pytest.mark.codex_cli,
    pytest.mark.long_run,
]

WAIT = 120.0
COMMENTS = 105
"""More than the prompt's window of 100."""
PAGES = 6
FINISH = mcp_tool("finish", {"outcome": "done", "summary": "Answered every comment."})


def last_tool_result(received: Any) -> Mapping[str, Any]:
    """The JSON object of the newest tool output in the conversation, as Codex passed it on
    (codex-cli 0.171.0 sends ``Wall time: …\nOutput:\n<the result's text>``)."""
    output = received.tool_outputs()[-1]["output"]
    text = output if isinstance(output, str) else json.dumps(output)
    value, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    assert isinstance(value, dict) and ("error" in value or "next_cursor" in value), text[:300]
    return value


def follow(received: Any) -> Step:
    """Do what the last result says: a correction names the reader and a cursor, a page names
    the next cursor; with nothing left to read, report again."""
    result = last_tool_result(received)
    correction = (result.get("error") or {}).get("correction")
    if correction:
        cursor = correction.get("cursor")
        return calls(mcp_tool(correction["instruction"], {"cursor": cursor} if cursor else {}))
    if result.get("next_cursor"):
        return calls(mcp_tool(READ_CURRENT_WAKE_COMMENTS, {"cursor": result["next_cursor"]}))
    return calls(FINISH)


def test_the_real_cli_follows_the_correction_reads_every_page_and_finishes(
    real_stack, model_endpoint
):
    start_real(real_stack)
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    # Report, follow the correction through every page and report again, then close.
    steps = [calls(FINISH), *[reply(follow) for _ in range(PAGES + 1)], say("All read; done.")]
    model_endpoint.script(model, steps)
    ctx = real_stack.setup_issue({}, provider_config=real_agent_config(model_endpoint, model))
    base = f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
    with real_stack.api() as api:
        comment_ids = [
            api.post(base, json={"body": f"Comment {n}: check item {n}."}).json()["id"]
            for n in range(1, COMMENTS + 1)
        ]
    real_stack.assign(ctx)

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["status"], run["error_code"]) == ("succeeded", None), real_stack.runner.tail()
    assert model_endpoint.exhausted(model) == []

    journal = query(
        real_stack.database_url,
        "SELECT tool, is_error, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run["id"]),
    )
    assert [(c["tool"], c["is_error"]) for c in journal] == [
        ("finish", True),
        *[(READ_CURRENT_WAKE_COMMENTS, False)] * PAGES,
        ("finish", False),
    ]
    refused = json.loads(journal[0]["result"])["error"]
    assert (refused["code"], refused["reason"]) == (READ_CURRENT_WAKE_COMMENTS, "unread")
    pages = [json.loads(c["result"]) for c in journal[1:-1]]
    assert [c["id"] for p in pages for c in p["comments"]] == comment_ids
    # The model saw the correction through Codex, then every page in turn.
    requests = model_endpoint.scripted(model)
    assert last_tool_result(requests[1])["error"]["code"] == READ_CURRENT_WAKE_COMMENTS
    assert [last_tool_result(r).get("page") for r in requests[2 : 2 + PAGES]] == list(
        range(1, PAGES + 1)
    )
    # One run, one accepted result, one turn; the task is done.
    assert [r["id"] for r in real_stack.runs(ctx)] == [run["id"]]
    assert run["result"]["outcome"] == "done"
    types = [e["type"] for e in real_stack.events(ctx, run["id"])]
    assert types.count("turn/completed") == 1
